package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestTranslateCommand(t *testing.T) {
	stream := `{"type":"RUN_STARTED","threadId":"t","runId":"r"}
{"type":"THINKING_START","title":"x"}
{"type":"THINKING_END"}
{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}
`
	var out, errb bytes.Buffer
	if code := run([]string{"translate", "--to", "0.0.45"}, strings.NewReader(stream), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := `data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}

data: {"type":"REASONING_START","messageId":"reasoning-r-1"}

data: {"type":"REASONING_END","messageId":"reasoning-r-1"}

data: {"type":"RUN_ERROR","message":"agui-relay: the run was cancelled; @ag-ui/client 0.0.45 cannot represent it — upgrade to 1.0","code":"cancelled"}

`
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, shape := range []string{"THINKING_START.title (x1)", "RUN_FINISHED.outcome.cancelled (x1)", `run "r"`} {
		if !strings.Contains(errb.String(), shape) {
			t.Errorf("stderr lacks %q:\n%s", shape, errb.String())
		}
	}

	// SSE in, the same bytes out, as the live relay would: a declared 1.0
	// stream to a 1.0 consumer passes untouched.
	sse := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\",\"protocolVersion\":\"1.0\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"rawEvent\":{}}\n\n"
	out.Reset()
	errb.Reset()
	if code := run([]string{"translate", "--to", "1.0"}, strings.NewReader(sse), &out, &errb); code != 0 || out.String() != sse || errb.Len() != 0 {
		t.Errorf("pass-through: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}

	// --from overrides what the stream declares.
	out.Reset()
	if code := run([]string{"translate", "--to", "1.0", "--from", "0.0.45"}, strings.NewReader(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`+"\n"), &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `"protocolVersion":"1.0"`) {
		t.Errorf("--from: exit %d, stdout %q", code, out.String())
	}
}

func TestTranslateCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"translate"},
		{"translate", "--to", "1.0.0"},
		{"translate", "--to", "0.0.30"},
		{"translate", "--to", "1.0", "--from", "x"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"translate", "--to", "1.0", "/nonexistent/stream.sse"}, nil, &out, &errb); code != 1 {
		t.Errorf("missing file: exit %d", code)
	}
}

// A producer declaring a version newer than the relay's is translated as
// newer, with one warning a run, as the relay logs it.
func TestTranslateWarnsOfANewerProducer(t *testing.T) {
	run1 := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r1\",\"protocolVersion\":\"99.0\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r1\"}\n\n"
	stream := run1 + strings.ReplaceAll(run1, "r1", "r2")
	var out, errb bytes.Buffer
	if code := run([]string{"translate", "--to", "1.0"}, strings.NewReader(stream), &out, &errb); code != 0 || out.String() != stream {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	want := "warning: producer speaks protocol 99.0, newer than the relay's 1.0: material the relay does not know passes on\n"
	if errb.String() != want+want {
		t.Errorf("stderr %q, want the warning once a run", errb.String())
	}
}
