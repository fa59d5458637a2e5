package rules

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

func runStream(v string, evs ...string) []StreamFault {
	s := NewStream(negotiate.MustParse(v))
	var out []StreamFault
	for _, ev := range evs {
		out = append(out, s.Next([]byte(ev))...)
	}
	return out
}

func rules_(fs []StreamFault) string {
	var rs []string
	for _, f := range fs {
		rs = append(rs, f.Rule)
	}
	return strings.Join(rs, ",")
}

func TestStreamSequence(t *testing.T) {
	const (
		start  = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
		finish = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
		runErr = `{"type":"RUN_ERROR","message":"m"}`
		stepA  = `{"type":"STEP_STARTED","stepName":"a"}`
		stepAF = `{"type":"STEP_FINISHED","stepName":"a"}`
		msgS   = `{"type":"TEXT_MESSAGE_START","messageId":"m"}`
		msgC   = `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`
		msgE   = `{"type":"TEXT_MESSAGE_END","messageId":"m"}`
	)
	cases := []struct {
		v    string
		evs  []string
		want string
	}{
		{"1.0", []string{start, stepA, msgS, msgC, msgE, stepAF, finish}, ""},
		{"1.0", []string{start, stepAF, finish}, "step-not-started"},
		{"1.0", []string{start, stepA, stepA, stepAF, finish}, "step-started-twice"},
		{"1.0", []string{start, stepA, finish}, "open-at-run-finished"},
		{"1.0", []string{msgS, start}, "first-event"},
		{"1.0", []string{start, start}, "run-started-twice"},
		{"1.0", []string{start, msgC}, "message-not-started"},
		{"1.0", []string{start, msgS, msgS}, "message-started-twice"},
		{"1.0", []string{start, finish, msgS}, "after-run-finished"},
		{"1.0", []string{start, runErr, start, finish}, ""},
		{"0.0.58", []string{start, runErr, start, finish}, "after-run-error"},
		{"0.0.36", []string{start, finish, start, finish}, "one-run-per-stream"},
		{"1.0", []string{start, `{"type":"USAGE_METADATA"}`, finish, `{"type":"USAGE_METADATA"}`}, ""},
		{"1.0", []string{start, `{"type":"STEP_STARTED","stepName":"a","subagentRunId":"s"}`, stepAF}, "step-not-started"},
	}
	for _, c := range cases {
		if got := rules_(runStream(c.v, c.evs...)); got != c.want {
			t.Errorf("%s %v: faults %q, want %q", c.v, c.evs, got, c.want)
		}
	}
}

func TestHints(t *testing.T) {
	ev := []byte(`{"type":"RUN_STARTED","thread_id":"t","run_id":"r"}`)
	j := JudgeEvent(negotiate.Current, ev)
	n := 0
	for _, f := range j.Findings {
		if f.Rule == "required" {
			if h := Hint(negotiate.Current, ev, f); !strings.Contains(h, "snake_case") {
				t.Errorf("%+v: hint %q", f, h)
			}
			n++
		}
	}
	if n != 2 {
		t.Errorf("want 2 missing fields, got %+v", j.Findings)
	}
	in := []byte(`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"tool","content":"x","tool_call_id":"c"}]}`)
	j = JudgeInput(negotiate.Current, in)
	if len(j.Findings) == 0 || !strings.Contains(Hint(negotiate.Current, in, j.Findings[len(j.Findings)-1]), "snake_case") {
		t.Errorf("nested snake_case not hinted: %+v", j.Findings)
	}
	ev = []byte(`{"type":"RUN_ERROR","error":"boom"}`)
	j = JudgeEvent(negotiate.Current, ev)
	if h := Hint(negotiate.Current, ev, j.Findings[len(j.Findings)-1]); !strings.Contains(h, "no message") {
		t.Errorf("RUN_ERROR without message: hint %q (%+v)", h, j.Findings)
	}
	ev = []byte(`{"type":"USAGE_METADATA"}`)
	if h := Hint(negotiate.Current, ev, JudgeEvent(negotiate.Current, ev).Findings[0]); !strings.Contains(h, "RUN_FINISHED.usage") {
		t.Errorf("USAGE_METADATA hint %q", h)
	}
	// A type a later release added is no framework's own: the hint names
	// the release, read from the shape tables.
	ev = []byte(`{"type":"SUBAGENT_STARTED","subagentRunId":"s"}`)
	v45 := negotiate.MustParse("0.0.45")
	added, ok := EventTypeAddedIn("SUBAGENT_STARTED")
	if !ok || KnownEventType(negotiate.MustParse("0.0.58"), []byte("SUBAGENT_STARTED")) || !KnownEventType(added, []byte("SUBAGENT_STARTED")) {
		t.Fatalf("EventTypeAddedIn(SUBAGENT_STARTED) = %s, %v", added, ok)
	}
	want := "SUBAGENT_STARTED came in release " + added.String() + ", later than 0.0.45, the version judged: a consumer of 0.0.45 fails the run on it; one of " + added.String() + " or later reads it (see agui-relay versions)"
	if h := Hint(v45, ev, JudgeEvent(v45, ev).Findings[0]); h != want {
		t.Errorf("SUBAGENT_STARTED against 0.0.45: hint %q, want %q", h, want)
	}
	if _, ok := EventTypeAddedIn("USAGE_METADATA"); ok {
		t.Error("EventTypeAddedIn(USAGE_METADATA): no release has it")
	}
	ev = []byte(`{"type":"STEP_STARTED","stepName":"s"}`)
	if h := Hint(negotiate.Current, ev, Finding{Rule: "required", Pointer: "/x", Shape: "STEP_STARTED.x"}); h != "" {
		t.Errorf("hint without cause: %q", h)
	}
}

// The stream reads an event's type as its consumer does (the last "type"
// member), and an id by the encoders' layout where it can, by a walk
// otherwise, finding the same member either way.
func TestStreamReadsTypesAndIDsAsTheWalkDoes(t *testing.T) {
	const start = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
	for _, c := range []struct {
		evs  []string
		want string
	}{
		{[]string{start, `{"type":"TEXT_MESSAGE_START","type":"STEP_STARTED","stepName":"a"}`, `{"type":"STEP_FINISHED","stepName":"a"}`}, ""},
		{[]string{start, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{"type":"TEXT_MESSAGE_CONTENT","delta":"x","messageId":"m"}`}, ""},
		{[]string{start, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{ "type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`}, ""},
		{[]string{start, `{"type":"TEXT_MESSAGE_START","messageId":"m\u0031"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1"}`}, ""},
		{[]string{start, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageIdx":"m","messageId":"n"}`}, "message-not-started"},
		{[]string{start, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{"type":"TEXT_MESSAGE_\u0043ONTENT","messageId":"n"}`}, "message-not-started"},
	} {
		if got := rules_(runStream("1.0", c.evs...)); got != c.want {
			t.Errorf("%v: faults %q, want %q", c.evs, got, c.want)
		}
	}
	for _, doc := range []string{
		`{"type":"A","messageId":"m","delta":"x"}`, `{"type":"A","delta":"x","messageId":"m"}`, `{"type":"A","messageId":"m\"x"}`,
		`{"type":"A\"","messageId":"m"}`, `{"type":"A","messageId":1}`, `{"type":"A","messageIdx":"m"}`, `{"type":"A"}`, `{"type":"A","messageId":"m","messageId":"n"}`, `{"type":"AB","messageId":"m"}`, `{"type":"A","messageId":"m`,
	} {
		if v, ok := secondMember(doc, "A", "messageId"); ok && `"`+v+`"` != memberOf(doc, "messageId") {
			t.Errorf("%s: secondMember %q, memberOf %s", doc, v, memberOf(doc, "messageId"))
		}
	}
}
