package cli

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rowOf returns the table row of a consumer, each "no (N)" replaced by
// "no: " and the finding listed under N.
func rowOf(t *testing.T, out, consumer string) string {
	t.Helper()
	notes := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  \((\d+)\) (.*)$`).FindAllStringSubmatch(out, -1) {
		notes[m[1]] = m[2]
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, consumer+" ") {
			return regexp.MustCompile(`no \((\d+)\)`).ReplaceAllStringFunc(l, func(c string) string {
				n := strings.Trim(c, "no ()")
				if notes[n] == "" {
					t.Errorf("%s: %s, but no finding (%s) below the table:\n%s", consumer, c, n, out)
				}
				return "no: " + notes[n]
			})
		}
	}
	t.Fatalf("no row %q in\n%s", consumer, out)
	return ""
}

// unwrapped is out with its lines wrapped at 100 columns joined again, and
// every run of blanks one space.
func unwrapped(out string) string { return strings.Join(strings.Fields(out), " ") }

// One live run against the demo agent: every profile, 1.0 and the
// CopilotKit releases get a row saying whether they read the stream
// directly and through the relay.
func TestCheckURLAgainstTheDemoAgent(t *testing.T) {
	at, _, _ := startServe(t, nil)
	code, out, errs := runCmd(t, "", "check", "--url", at.demo+"/agent?scenario=synthetic&events=300")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "HTTP 200, text/event-stream", `protocolVersion declared: "1.0"`, "producer faults (by the 1.0 rules): none",
		"summary: every consumer the relay serves reads the stream through it")
	for _, row := range []struct{ consumer, want string }{
		{"P30", "0.0.27–0.0.36  no: 0.0.27 #33 REASONING_START (whole): rejected unknown-event-type"},
		{"P45", "0.0.45–0.0.53  no: 0.0.45 #86 TOOL_CALL_RESULT /content: malformed type:string"},
		{"V1", "1.0            yes"},
		{"CopilotKit 1.75 (@copilotkit/runtime, @copilotkit/core)", "0.0.59         no: #86 TOOL_CALL_RESULT /content: malformed type:string"},
		{"CopilotKit 1.74 (@copilotkit/react-core)", "0.0.59"},
		{"CopilotKit 2 (@copilotkitnext/* 1.54)", "0.0.48"},
	} {
		r := rowOf(t, out, row.consumer)
		if !strings.Contains(r, row.want) {
			t.Errorf("row %q lacks %q", r, row.want)
		}
		if row.consumer == "P30" && !strings.HasSuffix(r, "  not served") {
			t.Errorf("row %q: served", r)
		}
		if row.consumer != "P30" && !strings.HasSuffix(r, "  yes") {
			t.Errorf("row %q: not read through the relay", r)
		}
	}
	// A legacy agent: no declaration, and 0.0.37 to 0.0.44 read it as it is.
	code, out, _ = runCmd(t, "", "check", "--url", at.demo+"/agent?version=0.0.40")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	wantContains(t, out, "protocolVersion declared: none (a producer from before the field: 0.0.x)")
	if r := rowOf(t, out, "P37"); !strings.Contains(r, "0.0.37–0.0.40  yes") {
		t.Errorf("row %q", r)
	}
}

// A producer fault the relay does not repair: listed with its pointer and
// likely cause, and no consumer reads the stream even through the relay.
func TestCheckURLProducerFaults(t *testing.T) {
	var posted string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posted = string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"thread_id\":\"t\",\"run_id\":\"r\"}\n\n")
		fmt.Fprint(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
	defer srv.Close()
	in := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(in, []byte(`{"threadId":"mine","runId":"r1","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":{"k":1}}`), 0o644)
	code, out, errs := runCmd(t, "", "check", "--url", srv.URL, "--input", in)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(posted, `"threadId":"mine"`) || !strings.Contains(posted, `"forwardedProps":{"k":1}`) {
		t.Errorf("posted %s", posted)
	}
	wantContains(t, out, "producer faults (by the 1.0 rules):", "#0 RUN_STARTED:", "/threadId: malformed: required",
		"hint: field names are snake_case", "summary: some consumers the relay serves cannot read the stream")
	if r := rowOf(t, out, "V1"); strings.Count(r, "no: #0 RUN_STARTED /threadId: malformed required") != 2 {
		t.Errorf("row %q", r)
	}
}

func TestCheckURLClearErrors(t *testing.T) {
	gone := refusedURL(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>sign in</html>")
	}))
	defer html.Close()
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"threadId":"t","runId":"r","messages":"hi"}`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--url", gone}, 1, "refused: dial tcp"},
		{[]string{"--url", html.URL}, 1, `not SSE: HTTP 200 with Content-Type "text/html", not text/event-stream: <html>sign in</html>`},
		{[]string{"--url", silent.URL, "--headers-timeout", "50ms"}, 1, "timeout headers"},
		{[]string{"--url", gone, "--input", bad}, 1, "--input " + bad + ": malformed for AG-UI 1.0 at /messages: "},
		{[]string{"--url", gone, bad}, 2, "with --url, FILE is the RunAgentInput to post: give --input"},
		{[]string{"--url", "agent:8000"}, 2, `"agent:8000" is not an http:// or https:// URL`},
	} {
		code, out, errs := runCmd(t, "", append([]string{"check"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errs)
		}
	}
}

// --profiles gives the same table for a recording.
func TestCheckProfilesOfARecording(t *testing.T) {
	code, out, errs := runCmd(t, "", "check", "--profiles", "testdata/streams/legacy-thinking.sse")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "protocolVersion declared: none", "CopilotKit 2 (@copilotkitnext/* 1.54)")
	if r := rowOf(t, out, "P59"); !strings.HasSuffix(r, "yes") {
		t.Errorf("row %q", r)
	}
}

// check --url and load reach one verdict on one stream: one without a
// terminal event, one with an event before the start of its message, and
// a well-formed one that ends with RUN_ERROR (the run failed) fail both,
// for the same reason.
func TestCheckURLAndLoadAgree(t *testing.T) {
	for _, tc := range []struct {
		name, events, check, load string
	}{
		{"no terminal", `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
			"stream: no terminal: the stream ended after 1 event without RUN_FINISHED or RUN_ERROR", "no terminal             1  e.g. the stream ended after 1 event without RUN_FINISHED or RUN_ERROR"},
		{"out of order", `{"type":"RUN_STARTED","threadId":"t","runId":"r"}` + "\n\ndata: " +
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}` + "\n\ndata: " + `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
			"stream: message-not-started:", "out of order            1  e.g. #1 TEXT_MESSAGE_CONTENT: message-not-started"},
		{"RUN_ERROR", `{"type":"RUN_STARTED","threadId":"t","runId":"r"}` + "\n\ndata: " + `{"type":"RUN_ERROR","message":"the model is busy","code":"overloaded"}`,
			"run: failed: the producer ended the run with RUN_ERROR overloaded: the model is busy: the stream is well-formed, but the run itself failed",
			"e.g. RUN_ERROR overloaded: the model is busy"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", tc.events)
		}))
		code, out, errs := runCmd(t, "", "check", "--url", srv.URL)
		wellFormed := tc.name == "RUN_ERROR" // the stream is; the run failed
		if code != 1 || !strings.Contains(unwrapped(out), tc.check) || strings.Contains(out, "producer faults (by the 1.0 rules): none") != wellFormed {
			t.Errorf("%s: check exit %d, want 1 with %q:\n%s%s", tc.name, code, tc.check, out, errs)
		}
		code, out, errs = loadCmd(t, context.Background(), "-n", "1", "-c", "1", "--progress", "none", srv.URL)
		if code != 1 || !strings.Contains(out, tc.load) {
			t.Errorf("%s: load exit %d, want 1 with %q:\n%s%s", tc.name, code, tc.load, out, errs)
		}
		srv.Close()
	}
}

// check --url says when the producer answers with ids of its own rather
// than the posted ones, and not when it echoes them.
func TestCheckURLSaysWhenIDsAreIgnored(t *testing.T) {
	for _, echo := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in struct{ ThreadID, RunID string }
			json.NewDecoder(r.Body).Decode(&in)
			if !echo {
				in.ThreadID, in.RunID = "fixed-thread", "fixed-run"
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":%q,\"runId\":%q}\n\n", in.ThreadID, in.RunID)
			fmt.Fprintf(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":%q,\"runId\":%q}\n\n", in.ThreadID, in.RunID)
		}))
		_, out, errs := runCmd(t, "", "check", "--url", srv.URL)
		srv.Close()
		said := strings.Contains(unwrapped(out), `RUN_STARTED said "fixed-thread" and "fixed-run": the producer ignores the input's ids`)
		if said == echo || echo && strings.Contains(out, "ids:") {
			t.Errorf("echo %v:\n%s%s", echo, out, errs)
		}
	}
}

// A producer that answers gzip (Content-Encoding: gzip, flushed event by
// event) is judged by its events, decoded as the relay decodes them and as
// a consumer reads them through it; one cut off inside the gzip by what it
// decoded; another coding, which the relay passes on undecoded, is said to
// be one check cannot read.
func TestCheckURLDecodesGzip(t *testing.T) {
	var posted struct{ ThreadID, RunID string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&posted)
		w.Header().Set("Content-Type", "text/event-stream")
		coding := r.URL.Query().Get("coding")
		w.Header().Set("Content-Encoding", coding)
		zw := gzip.NewWriter(w)
		event := func(ev string) {
			fmt.Fprintf(zw, "data: %s\n\n", ev)
			zw.Flush()
			w.(http.Flusher).Flush()
		}
		event(fmt.Sprintf(`{"type":"RUN_STARTED","threadId":%q,"runId":%q}`, posted.ThreadID, posted.RunID))
		if r.URL.Query().Has("cut") {
			panic(http.ErrAbortHandler) // the connection closed inside the gzip
		}
		event(`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`)
		event(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`)
		event(`{"type":"TEXT_MESSAGE_END","messageId":"m"}`)
		event(fmt.Sprintf(`{"type":"RUN_FINISHED","threadId":%q,"runId":%q}`, posted.ThreadID, posted.RunID))
		zw.Close()
	}))
	defer srv.Close()

	code, out, errs := runCmd(t, "", "check", "--url", srv.URL+"?coding=gzip")
	if code != 0 {
		t.Fatalf("gzip: exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, " bytes decoded from gzip\n", "producer: 5 events", "producer faults (by the 1.0 rules): none",
		"summary: every consumer the relay serves reads the stream through it")

	code, out, errs = runCmd(t, "", "check", "--url", srv.URL+"?coding=x-gzip&cut")
	if code != 1 || !strings.Contains(out, "the stream ended early") ||
		!strings.Contains(out, "no terminal: the stream ended after 1 event without RUN_FINISHED or RUN_ERROR") {
		t.Errorf("gzip cut off: exit %d, want 1 judging the one event decoded:\n%s%s", code, out, errs)
	}

	code, out, errs = runCmd(t, "", "check", "--url", srv.URL+"?coding=br")
	if want := `the response's Content-Encoding is "br": check, like the relay, decodes only gzip`; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("br: exit %d, want 1 with %q:\n%s%s", code, want, out, errs)
	}
}

// check --url's output is at most 100 columns wide (the URL's own line
// aside): a cell of the table that is not "yes" names its first fatal
// finding by a number, listed below it. Against the demo agent, a legacy
// stream and a producer with faults and no terminal event.
func TestCheckURLFits100Columns(t *testing.T) {
	at, _, _ := startServe(t, nil)
	faulty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"thread_id\":\"t\",\"run_id\":\"r\"}\n\n")
		fmt.Fprint(w, "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"\"}\n\n")
	}))
	defer faulty.Close()
	for _, url := range []string{at.demo + "/agent?scenario=synthetic&events=300", at.demo + "/agent?version=0.0.40", faulty.URL} {
		_, out, errs := runCmd(t, "", "check", "--url", url)
		lines := strings.Split(out, "\n")
		if len(lines) < 10 || lines[0] != "agui-relay check: "+url {
			t.Fatalf("%s: output\n%s\n%s", url, out, errs)
		}
		for _, l := range lines[1:] {
			if n := len([]rune(l)); n > 100 {
				t.Errorf("%s: a line of %d columns:\n%s", url, n, l)
			}
		}
	}
}
