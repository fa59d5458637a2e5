package rules

import (
	"bytes"
	"fmt"
	"reflect"
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

// bothWays checks evs for a consumer of v twice, event by event: on fast
// (a stream for v, Reset first) by NextFlat, then NextOfType where
// it declines (as the load generator does), and on a new stream by PeekType
// and NextOfType alone. It fails when the two differ in an event's type or
// faults, and returns how many events NextFlat took.
func bothWays(t *testing.T, fast *Stream, evs [][]byte) int {
	t.Helper()
	v := fast.v
	fast.Reset()
	full := NewStream(v)
	took := 0
	for i, ev := range evs {
		typ := fast.NextFlat(ev)
		var fs []StreamFault
		if typ != nil {
			took++
		} else {
			typ = PeekType(ev)
			fs = fast.NextOfType(ev, typ)
		}
		wantTyp := PeekType(ev)
		wantFs := full.NextOfType(ev, wantTyp)
		if !bytes.Equal(typ, wantTyp) || (typ == nil) != (wantTyp == nil) || !reflect.DeepEqual(fs, wantFs) {
			t.Fatalf("%s #%d %s: type %q faults %+v, PeekType and NextOfType: %q %+v", v, i, ev, typ, fs, wantTyp, wantFs)
		}
	}
	return took
}

// NextFlat reaches Next's verdict on every event it takes, and declines
// what it cannot judge so: events out of order (before the run, after its
// end or error, of a message or tool call not open, started twice),
// another layout (whitespace, a value that is no string, an id not second),
// a key that is or may spell "type", an escaped id, the run's and steps'
// types, a type the version does not know.
func TestNextFlatAgreesWithNext(t *testing.T) {
	const (
		start   = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
		finish  = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
		failed  = `{"type":"RUN_ERROR","message":"x","code":"c"}`
		msg     = `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`
		msg2    = `{"type":"TEXT_MESSAGE_START","messageId":"m2","role":"assistant"}`
		end     = `{"type":"TEXT_MESSAGE_END","messageId":"m"}`
		text    = `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`
		text2   = `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"hi"}`
		call    = `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`
		args    = `{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}`
		callEnd = `{"type":"TOOL_CALL_END","toolCallId":"c"}`
		think   = `{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"hm"}`
	)
	streams := []*Stream{NewStream(negotiate.Current), NewStream(negotiate.MustParse("0.0.45")), NewStream(negotiate.MustParse("0.0.30"))}
	for _, tc := range []struct {
		name string
		evs  []string
		took int
	}{
		{"in order", []string{start, msg, text, text, text, end, call, args, args, callEnd, think, think, finish}, 11},
		{"before the run", []string{text, text, start, text}, 0},
		{"not started", []string{start, text, text, msg, text}, 2},
		{"after its end", []string{start, msg, text, end, text, text}, 3},
		{"another message open", []string{start, msg, msg2, text, text, text2, text2, text}, 7},
		{"after RUN_FINISHED", []string{start, msg, text, finish, text, text}, 2},
		{"after RUN_ERROR", []string{start, msg, text, failed, text, text}, 2},
		{"a second run", []string{start, msg, text, finish, start, text, text}, 2},
		{"a prefix of the open id", []string{start, msg2, text2, text, text}, 2},
		{"tool call not started", []string{start, call, args, callEnd, args, args}, 3},
		{"another member after the delta", []string{start, msg, text,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x\",\"type\":\"RUN_FINISHED"}`, text,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","messageId":"n"}`, text,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","type":"RUN_FINISHED"}`, text}, 6},
		{"escapes", []string{start, `{"type":"TEXT_MESSAGE_START","messageId":"a\"b","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a\"b","delta":"x"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a"b","delta":"x"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"a","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"x"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"\u0074ype\\"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a\\","delta":"x"}`}, 3},
		{"other layouts", []string{start, msg, text, `{"type":"TEXT_MESSAGE_CONTENT", "messageId":"m","delta":"x"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","delta":"x","messageId":"m"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"} `,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":1}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"`, text}, 5},
		// The key after the type does not end: no JSON, where the id is
		// looked for.
		{"not JSON", []string{start, msg, text, `{"type":"TEXT_MESSAGE_CONTENT""`, `{"type":"TEXT_MESSAGE_CONTENT","messageId"`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":`, `{"type":"TEXT_MESSAGE_CONTENT","messageId": `, text}, 3},
		{"members", []string{start, msg, msg, `{"type":"TEXT_MESSAGE_END","messageId":"x"}`, `{"type":"TEXT_MESSAGE_START","role":"assistant","messageId":"m3"}`,
			`{"type":"STEP_STARTED","stepName":"s"}`, `{"type":"NOT_A_TYPE","messageId":"m"}`, `{"type":"CUSTOM","name":"n","value":{"type":"RUN_FINISHED"}}`,
			`{"type":"STATE_DELTA","delta":"x"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\u0022,\"type\":\"RUN_FINISHED"}`, text}, 4},
		// Each ends the run for a consumer, which reads a second type.
		{"a key that spells type", []string{start, msg, text, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a","typ\u0065":"RUN_FINISHED"}`, text}, 2},
		{"an escaped quote", []string{start, msg, text, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\\\"","type":"RUN_FINISHED"}`, text}, 2},
		{"an escaped backslash", []string{start, msg, text, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\\\\","type":"RUN_FINISHED"}`, text}, 2},
		{"an empty id", []string{start, `{"type":"TEXT_MESSAGE_START","messageId":"","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"","delta":"x"}`, `{"type":"REASONING_MESSAGE_CONTENT","messageId":"","delta":"x"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"","delta":"x"}`}, 4},
	} {
		var evs [][]byte
		for _, ev := range tc.evs {
			evs = append(evs, []byte(ev))
		}
		for _, st := range streams { // reused: Reset forgets the stream before
			if took := bothWays(t, st, evs); st.v == negotiate.Current && took != tc.took {
				t.Errorf("%s: NextFlat took %d events, want %d", tc.name, took, tc.took)
			}
		}
	}
}

// FuzzNextFlat: NextFlat, with NextOfType where it
// declines, reaches the verdicts of NextOfType alone on any stream (the
// lines of the input, each an event) for any version. Seeds: the
// repository's recorded streams.
//
//	go test -run '^$' -fuzz FuzzNextFlat -fuzztime 60s ./rules/
func FuzzNextFlat(f *testing.F) {
	for i, b := range seedFiles(f, "streams", "*.sse") {
		var evs []string
		for line := range strings.SplitSeq(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				evs = append(evs, data)
			}
		}
		f.Add([]byte(strings.Join(evs, "\n")), byte(i))
	}
	f.Add([]byte(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`+"\n"+`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`+"\n"+
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`+"\n"+`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","type":"RUN_FINISHED"}`), byte(0))
	versions := fuzzVersions()
	f.Fuzz(func(t *testing.T, stream []byte, vb byte) {
		bothWays(t, NewStream(versions[int(vb)%len(versions)]), bytes.Split(stream, []byte("\n")))
	})
}

// Past the few open ids a stream lists, it tracks them as well: a message
// started twice, a content of one ended, the ones open at RUN_FINISHED.
func TestStreamTracksManyOpenMessages(t *testing.T) {
	ev := func(typ string, id int) string {
		return fmt.Sprintf(`{"type":"TEXT_MESSAGE_%s","messageId":"m%02d","role":"assistant","delta":"x"}`, typ, id)
	}
	evs := []string{`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`}
	for i := 0; i < 2*maxListed; i++ {
		evs = append(evs, ev("START", i))
	}
	for i := 0; i < 2*maxListed; i++ {
		evs = append(evs, ev("CONTENT", i))
	}
	for i := 1; i < 2*maxListed; i++ {
		evs = append(evs, ev("END", i))
	}
	evs = append(evs, ev("START", 0), ev("CONTENT", 3), `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`)
	fs := runStream("1.0", evs...)
	if got := rules_(fs); got != "message-started-twice,message-not-started,open-at-run-finished" ||
		fs[2].Detail != `RUN_FINISHED with message "m00" still open` {
		t.Errorf("%s: %+v", got, fs)
	}
}
