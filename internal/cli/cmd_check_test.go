package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// testdataFile returns the path of rel under testdata/ (the recorded corpus
// and the specification-draft fixtures; testdata/README.md says where they
// come from) and fails the test when it is not there.
func testdataFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("testdata", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test material missing: %v (testdata/README.md says how to restore it)", err)
	}
	return p
}

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func wantContains(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestCheckCorpusSnakeCase(t *testing.T) {
	code, out, _ := runCmd(t, "", "check", testdataFile(t, "corpus/agui-benchmark/anthropic-raw/simple.sse"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantContains(t, out,
		"#0 RUN_STARTED: malformed",
		"/threadId: malformed: required (RUN_STARTED.threadId)",
		"/thread_id: stripped: unknown-property",
		"hint: field names are snake_case (thread_id for threadId): the producer likely serialises its models without camelCase aliases",
		"USAGE_METADATA: stripped",
		"token usage belongs on RUN_FINISHED.usage")
}

func TestCheckCorpusSteps(t *testing.T) {
	code, out, _ := runCmd(t, "", "check", testdataFile(t, "corpus/agui-benchmark/langgraph-cerebras/thinking.sse"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantContains(t, out, "stream: step-not-started: step", "finished but never started",
		"stream: step-started-twice", "hint: the producer likely")
}

func TestCheckCorpusRunErrorWithoutMessage(t *testing.T) {
	code, out, _ := runCmd(t, "", "check", testdataFile(t, "corpus/agui-benchmark/ag2/multi_turn_memory.sse"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	wantContains(t, out, "RUN_ERROR: malformed", "/message: malformed: required (RUN_ERROR.message)", "RUN_ERROR carries no message")
}

// An unknown event type is stripped by 1.0 and fails 0.0.x runs.
func TestCheckUnknownTypeByVersion(t *testing.T) {
	f := testdataFile(t, "corpus/agui-benchmark/cerebras-llama-3.1-8b/simple.sse")
	code, out, _ := runCmd(t, "", "check", f)
	if code != 0 {
		t.Errorf("1.0: exit %d, want 0:\n%s", code, out)
	}
	wantContains(t, out, "USAGE_METADATA: stripped", " 0 malformed; 0 stream faults")
	code, out, _ = runCmd(t, "", "check", f, "--version", "0.0.52")
	if code != 1 {
		t.Errorf("0.0.52: exit %d, want 1", code)
	}
	wantContains(t, out, "USAGE_METADATA: rejected", "judged against 0.0.52")
}

func TestCheckJSONLinesFromStdin(t *testing.T) {
	in := `{"type":"RUN_STARTED","threadId":"t","runId":"r"}

{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}
{"type":"TOOL_CALL_END","toolCallId":"c"}
{"type":"STATE_DELTA","delta":[{"op":"add","path":"x","value":1}]}
{"type":"RUN_FINISHED","threadId":"t","runId":"r"}
`
	var out bytes.Buffer
	c := checker{v: negotiate.Current, out: &out, now: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := c.stream(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	wantContains(t, out.String(),
		"#1 TOOL_CALL_START: translated",
		"/parentMessageId: translated: retired (TOOL_CALL_START.parentMessageId:null) → parentMessageId omitted [step null-means-absent, retired in 1.0, translation expires 2027-09-17]",
		"#3 STATE_DELTA: malformed", "/delta/0/path: malformed: json-pointer",
		"summary: 5 events judged against 1.0: 3 accepted, 1 translated, 0 stripped, 0 rejected, 1 malformed; 0 stream faults")
	if !c.failed {
		t.Error("a malformed event did not fail the check")
	}
	// After expiry the translation is gone and the shape is unrecognised.
	out.Reset()
	c = checker{v: negotiate.Current, out: &out, now: time.Date(2027, 9, 17, 0, 0, 0, 0, time.UTC)}
	if err := c.stream(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	wantContains(t, out.String(), "#1 TOOL_CALL_START: stripped")

	code, sout, _ := runCmd(t, `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`+"\n", "check")
	if code != 0 || !strings.Contains(sout, "#0 RUN_STARTED: accepted") {
		t.Errorf("stdin: exit %d\n%s", code, sout)
	}
}

func TestCheckInput(t *testing.T) {
	code, out, _ := runCmd(t, "", "check", "--input", testdataFile(t, "spec-draft/RunAgentInput/valid/full.json"))
	if code != 0 {
		t.Errorf("valid input: exit %d\n%s", code, out)
	}
	wantContains(t, out, "input: accepted")
	code, out, _ = runCmd(t, "", "check", "--input", testdataFile(t, "corpus/agui-benchmark/ag2/simple.request.json"))
	if code != 1 {
		t.Errorf("snake_case input: exit %d", code)
	}
	wantContains(t, out, "input: malformed", "/threadId: malformed: required", "the client likely serialises")
	code, out, _ = runCmd(t, `{"threadId":"t","runId":"r","messages":[]}`, "check", "--input", "--version", "0.0.59")
	if code != 1 {
		t.Errorf("0.0.59 input without tools: exit %d", code)
	}
	wantContains(t, out, "/tools: malformed: required")
}

func TestCheckUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--version", "1.x"},
		{"check", "a", "b"},
		{"check", "--nope"},
	} {
		if code, _, _ := runCmd(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runCmd(t, "", "check", "--help"); code != 0 || !strings.Contains(out, "Exit status") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", "check", filepath.Join(t.TempDir(), "missing.sse")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

// TestCheckCorpusAgreesWithConsumers: testdata/corpus/consumers.tsv records
// what the published consumers make of each recorded run (TestCorpus in
// conformance/ measures it); check must pass exactly the runs each consumer
// resolves.
func TestCheckCorpusAgreesWithConsumers(t *testing.T) {
	table, err := os.ReadFile(testdataFile(t, "corpus/consumers.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if len(lines) != 172 || lines[0] != "run\tclient-1.0.0\tclient-0.0.52" {
		t.Fatalf("consumers.tsv: want a header and 171 runs, got %d lines, header %q", len(lines), lines[0])
	}
	resolves := map[string]int{}
	for _, l := range lines[1:] {
		cols := strings.Split(l, "\t")
		if len(cols) != 3 {
			t.Fatalf("consumers.tsv: bad line %q", l)
		}
		f := testdataFile(t, "corpus/agui-benchmark/"+cols[0]+".sse")
		for i, version := range []string{"1.0", "0.0.52"} {
			resolved := cols[1+i] != "rejected"
			if resolved {
				resolves[version]++
			}
			code, out, _ := runCmd(t, "", "check", "--version", version, f)
			if (code == 0) != resolved {
				t.Errorf("%s, %s: check exits %d; the published consumer's verdict is %s\n%s", cols[0], version, code, cols[1+i], out)
			}
		}
	}
	// The figures testdata/README.md gives.
	if resolves["1.0"] != 117 || resolves["0.0.52"] != 109 {
		t.Errorf("consumers.tsv: 1.0.0 resolves %d runs, 0.0.52 %d; the README says 117 and 109", resolves["1.0"], resolves["0.0.52"])
	}
}

// An event type a later release added is no framework's own: check names
// the release that added it.
func TestCheckHintNamesTheReleaseThatAddedAType(t *testing.T) {
	stream := `{"type":"RUN_STARTED","threadId":"t","runId":"r"}
{"type":"SUBAGENT_STARTED","subagentRunId":"s","parentRunId":"r","name":"researcher"}
{"type":"RUN_FINISHED","threadId":"t","runId":"r"}
`
	code, out, _ := runCmd(t, stream, "check", "--version", "0.0.45")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	wantContains(t, out, "#1 SUBAGENT_STARTED: rejected",
		"hint: SUBAGENT_STARTED came in release 0.0.59, later than 0.0.45, the version judged: a consumer of 0.0.45 fails the run on it")
	if strings.Contains(out, "framework-specific") {
		t.Errorf("the hint calls a type of 0.0.59 framework-specific:\n%s", out)
	}
}
