package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/rules"
)

func TestTranslateInputCommand(t *testing.T) {
	legacy := `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"AA=="},{"type":"binary","mimeType":"x/y","id":"f"}]}],"tools":[],"context":[],"forwardedProps":null}` + "\n"
	var out, errb bytes.Buffer
	code := run([]string{"translate", "--input", "--to", "1.0", "--from", "0.0.45"}, strings.NewReader(legacy), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"}}]}],"tools":[],"context":[],"forwardedProps":null,"protocolVersion":"1.0"}` + "\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if s := errb.String(); !strings.Contains(s, "binary(id only) (x1)") || !strings.Contains(s, `run "r"`) || !strings.Contains(s, "input 0.0.45 -> 1.0") {
		t.Errorf("stderr:\n%s", s)
	}

	// From a file, toward a producer older than any consumer the relay
	// serves (input goes to any producer); the consumer's version is read
	// from its declaration.
	current := `{"threadId":"t","runId":"r","protocolVersion":"1.0","parentRunId":"p","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"forwardedProps":{"k":[1]}}`
	file := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(file, []byte(current), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"translate", "--input", "--to", "0.0.30", file}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"ab"}],"forwardedProps":{"k":[1]},"tools":[],"context":[]}`; out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if errb.Len() != 0 {
		t.Errorf("lossless translation warned: %s", errb.String())
	}

	// Same version on both sides: the very bytes, untouched.
	out.Reset()
	raw := "{ \"threadId\" : \"t\", \"runId\":\"r\", \"protocolVersion\":\"1.0\", \"messages\":[] }\n"
	if code := run([]string{"translate", "--input", "--to", "1.0"}, strings.NewReader(raw), &out, &errb); code != 0 || out.String() != raw {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
}

func TestTranslateInputCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
	}{
		{[]string{"translate", "--input"}, `{}`, 2},
		{[]string{"translate", "--input", "--to", "nope"}, `{}`, 2},
		{[]string{"translate", "--input", "--to", "0.0.45"}, `{"threadId":`, 1},
		{[]string{"translate", "--input", "--to", "0.0.45"}, `[1]`, 1},
		// A consumer declaring a release older than the relay serves.
		{[]string{"translate", "--input", "--to", "0.0.45"}, `{"protocolVersion":"0.0.30"}`, 1},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, strings.NewReader(c.stdin), &out, &errb); code != c.code {
			t.Errorf("%v on %s: exit %d, want %d (%s)", c.args, c.stdin, code, c.code, errb.String())
		}
		if c.code != 0 && out.Len() != 0 {
			t.Errorf("%v: wrote %s on failure", c.args, out.String())
		}
	}
}

// A document nested deeper than rules.MaxNesting is a clear error, not a
// crash of the process (gjson's validity check alone recurses once per
// level and would overflow the stack on a deep enough one); one nested
// exactly that deep is translated. Both are objects, so that the depth
// alone refuses the first.
func TestTranslateInputRefusesDeepNesting(t *testing.T) {
	nested := func(depth int) string { // an object holding depth-1 arrays
		return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}"
	}
	var out, errb bytes.Buffer
	code := run([]string{"translate", "--input", "--to", "0.0.45"}, strings.NewReader(nested(rules.MaxNesting+1)), &out, &errb)
	if code == 0 || out.Len() != 0 || !strings.Contains(errb.String(), "not a JSON object") {
		t.Fatalf("nested %d deep: exit %d, stdout %d bytes, stderr %q", rules.MaxNesting+1, code, out.Len(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"translate", "--input", "--to", "0.0.45"}, strings.NewReader(nested(rules.MaxNesting)), &out, &errb); code != 0 || out.Len() == 0 {
		t.Fatalf("nested %d deep: exit %d, stdout %d bytes, stderr %q", rules.MaxNesting, code, out.Len(), errb.String())
	}
}
