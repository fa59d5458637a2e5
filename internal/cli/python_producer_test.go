package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/record"
)

// --producer-version takes a Python release from the flag, the environment
// and a route's option, in both spellings; a release the relay does not know
// is refused at start.
func TestProducerVersionNamesAPythonRelease(t *testing.T) {
	py19 := negotiate.PyRelease{Minor: 1, Patch: 19}
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"--producer-version", "ag-ui-protocol@0.1.19"}, ""},
		{[]string{"--producer-version", "py0.1.19"}, ""},
		{nil, "py0.1.19"},
	} {
		sc, err := parseServe(c.args, func(k string) string {
			if k == "AGUI_RELAY_PRODUCER_VERSION" {
				return c.env
			}
			return ""
		}, io.Discard)
		if err != nil {
			t.Fatalf("%q %q: %v", c.args, c.env, err)
		}
		if sc.producerPython != py19 || sc.producerVersion != negotiate.MustParse("0.0.54") {
			t.Errorf("%q %q: producer %s, Python %s; want 0.0.54, 0.1.19", c.args, c.env, sc.producerVersion, sc.producerPython)
		}
	}
	for _, bad := range []string{"py0.1.99", "ag-ui-protocol@0.1", "py"} {
		if _, err := parseServe([]string{"--producer-version", bad}, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A route's option, over the flag's default; a TypeScript release on
	// another route clears the Python one.
	c := flagDefaults(t, "--producer-version", "py0.1.10")
	routes, err := parseRoutes([]byte("routes:\n  - {name: a, prefix: /a, upstream: http://x, producerVersion: ag-ui-protocol@0.1.19}\n"+
		"  - {name: b, prefix: /b, upstream: http://x, producerVersion: \"0.0.45\"}\n  - {name: c, prefix: /c, upstream: http://x}\n"), c)
	if err != nil {
		t.Fatal(err)
	}
	if routes[0].producerPython != py19 || routes[0].producerVersion != negotiate.MustParse("0.0.54") {
		t.Errorf("route a: %s %s", routes[0].producerVersion, routes[0].producerPython)
	}
	if !routes[1].producerPython.IsZero() || routes[1].producerVersion != negotiate.MustParse("0.0.45") {
		t.Errorf("route b: %s %s", routes[1].producerVersion, routes[1].producerPython)
	}
	if routes[2].producerPython != (negotiate.PyRelease{Minor: 1, Patch: 10}) {
		t.Errorf("route c does not take the flag's Python release: %s", routes[2].producerPython)
	}
	if _, err := parseRoutes([]byte("routes:\n  - {name: a, prefix: /a, upstream: http://x, producerVersion: py0.1.3}\n"), c); err == nil || !strings.Contains(err.Error(), "producerVersion") {
		t.Errorf("an unknown Python release on a route: %v", err)
	}
}

// pythonProducer answers like an agent on ag-ui-protocol 0.1.10 behind
// FastAPI: a RunAgentInput missing what its models require, or carrying a
// role they do not know, is a 422 for the whole request; otherwise it
// streams what its encoder writes, exclude_none dropping a CUSTOM value of
// None. got receives every input it was sent.
func pythonProducer(t *testing.T, got chan<- map[string]json.RawMessage) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]json.RawMessage
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, `{"detail":"not JSON"}`, http.StatusUnprocessableEntity)
			return
		}
		got <- in
		for _, k := range []string{"threadId", "runId", "state", "messages", "tools", "context", "forwardedProps"} {
			if _, ok := in[k]; !ok {
				http.Error(w, `{"detail":[{"type":"missing","loc":["body","`+k+`"]}]}`, http.StatusUnprocessableEntity)
				return
			}
		}
		var msgs []struct{ Role string }
		if err := json.Unmarshal(in["messages"], &msgs); err != nil {
			http.Error(w, `{"detail":"messages"}`, http.StatusUnprocessableEntity)
			return
		}
		for _, m := range msgs {
			switch m.Role {
			case "developer", "system", "assistant", "user", "tool", "activity":
			default:
				http.Error(w, `{"detail":"union_tag_invalid"}`, http.StatusUnprocessableEntity)
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
		fmt.Fprint(w, "data: {\"type\":\"CUSTOM\",\"name\":\"on_interrupt\"}\n\n")
		fmt.Fprint(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// A 1.0 UI in front of an agent named by its ag-ui-protocol pin, over real
// sockets: the input reaches the agent in the shape its release requires
// (the same input without the relay is a 422), forwardedProps as the UI
// sent it, and the stream comes back as 1.0 reads it.
func TestPythonProducerEndToEnd(t *testing.T) {
	got := make(chan map[string]json.RawMessage, 2)
	agent := pythonProducer(t, got)
	input := `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[{"id":"u","role":"user","content":"hi"},{"id":"z","role":"reasoning","content":"hm"}],"forwardedProps":{"a":[1,null]}}`

	direct := postRun(t, agent.URL, input)
	direct.Body.Close()
	<-got
	if direct.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("the agent answers the UI's own input with %d, want 422", direct.StatusCode)
	}

	c := flagDefaults(t, "--upstream", agent.URL, "--producer-version", "ag-ui-protocol@0.1.10",
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	core, logs := observer.New(zapcore.InfoLevel)
	at := startServeLogged(t, c, zap.New(core))
	resp := postRun(t, "http://"+at.relay+"/", input)
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("through the relay: %d %s", resp.StatusCode, stream)
	}
	in := <-got
	testkit.WaitFor(t, "the run's log line", func() bool { return logs.FilterMessage("run").Len() > 0 })
	if line := logs.FilterMessage("run").All()[0].ContextMap(); line["producer_python"] != "ag-ui-protocol@0.1.10" {
		t.Errorf("the run's line names the producer %v, producer_python %v; want ag-ui-protocol@0.1.10 beside the TypeScript release", line["producer"], line["producer_python"])
	}
	if string(in["state"]) != "{}" || string(in["forwardedProps"]) != `{"a":[1,null]}` || string(in["tools"]) != "[]" || string(in["context"]) != "[]" {
		t.Errorf("the agent got state %s, forwardedProps %s, tools %s, context %s", in["state"], in["forwardedProps"], in["tools"], in["context"])
	}
	if _, ok := in["protocolVersion"]; ok {
		t.Error("protocolVersion reached a producer that predates it")
	}
	if strings.Contains(string(in["messages"]), "reasoning") {
		t.Errorf("a reasoning message reached 0.1.10: %s", in["messages"])
	}
	if !strings.Contains(string(stream), `{"type":"CUSTOM","name":"on_interrupt","value":null}`) ||
		!strings.Contains(string(stream), `"protocolVersion":"1.0"`) {
		t.Errorf("the stream is not what 1.0 reads:\n%s", stream)
	}
}

// The README's Python agent is named by a pin the relay takes.
func TestReadmeNamesAPythonAgentByItsPin(t *testing.T) {
	readme := readDoc(t, "README.md")
	i := strings.Index(readme, "--producer-version ag-ui-protocol@")
	if i < 0 {
		t.Fatal("README.md shows no agent named by its ag-ui-protocol pin")
	}
	pin := strings.Fields(readme[i+len("--producer-version "):])[0]
	if _, err := parseServe([]string{"--producer-version", pin}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("README's %s: %v", pin, err)
	}
}

// agui-relay translate takes a Python release where it names the producer:
// --to with --input, --from for a stream; never as the consumer.
func TestTranslateNamesAPythonProducer(t *testing.T) {
	code, out, stderr := runCmd(t, `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[{"id":"u","role":"user","content":"hi","metadata":{}}],"forwardedProps":{"a":1}}`,
		"translate", "--input", "--to", "ag-ui-protocol@0.1.9")
	if code != 0 || out != `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}],"forwardedProps":{"a":1},"tools":[],"context":[],"state":{}}` ||
		!strings.Contains(stderr, "ag-ui-protocol@0.1.9 forbids unknown members") {
		t.Errorf("translate --input --to ag-ui-protocol@0.1.9: exit %d\n%s\n%s", code, out, stderr)
	}
	stream := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":\"REASONING_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n"
	code, out, _ = runCmd(t, stream, "translate", "--to", "0.0.45", "--from", "py0.1.11")
	if code != 0 || !strings.Contains(out, `"role":"reasoning"`) {
		t.Errorf("a 0.1.11 stream for its own TypeScript release is not translated: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, stream, "translate", "--to", "py0.1.11"); code != 2 {
		t.Errorf("a Python release as the consumer: exit %d, want 2", code)
	}
}

// A recorded run of a Python producer replays as it went live: meta.json's
// commands name the release, so the replayed input gets the release's own
// rules and the replayed stream is translated as the live one was.
func TestPythonProducerRecordingReplays(t *testing.T) {
	got := make(chan map[string]json.RawMessage, 1)
	agent := pythonProducer(t, got)
	dir := t.TempDir()
	at, cancel, done := startServe(t, func(c *serveConfig) {
		c.upstream, c.recordDir = agent.URL, dir
		c.producerVersion, c.producerPython = negotiate.MustParse("0.0.41"), negotiate.PyRelease{Minor: 1, Patch: 10}
	})
	resp := postRun(t, "http://"+at.relay+"/", `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[],"forwardedProps":{}}`)
	live, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-got
	rd := stopForRecording(t, cancel, done, dir)
	var meta record.RecordingMeta
	b, _ := os.ReadFile(filepath.Join(rd, "meta.json"))
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	replay := func(line string) string {
		t.Helper()
		args := strings.Fields(line)
		args[len(args)-1] = filepath.Join(rd, args[len(args)-1])
		code, out, errOut := runCmd(t, "", args[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d %s", line, code, errOut)
		}
		return out
	}
	if meta.ProducerPython != "ag-ui-protocol@0.1.10" {
		t.Errorf("meta.json producerPython %q, want ag-ui-protocol@0.1.10", meta.ProducerPython)
	}
	if !strings.Contains(meta.Replay["input"], "--to ag-ui-protocol@0.1.10") || !strings.Contains(meta.Replay["events"], "--from ag-ui-protocol@0.1.10") {
		t.Errorf("replay commands %v", meta.Replay)
	}
	forwarded, _ := os.ReadFile(filepath.Join(rd, "input.forwarded.json"))
	if out := replay(meta.Replay["input"]); out != string(forwarded) {
		t.Errorf("input replay\n%s\nwant\n%s", out, forwarded)
	}
	if out := replay(meta.Replay["events"]); out != string(live) {
		t.Errorf("events replay\n%s\nwant\n%s", out, live)
	}
}
