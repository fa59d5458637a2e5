package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// inputTo translates in from a consumer of from for a producer of to, as
// the relay decides it, and returns the output and the warnings' shapes.
func inputTo(t *testing.T, from, to, in string) (string, string) {
	t.Helper()
	if !gjson.Valid(in) {
		t.Fatalf("test input is not JSON: %s", in)
	}
	plan := negotiate.DecideInput(negotiate.MustParse(from), negotiate.MustParse(to))
	out, run := TranslateInput(plan, []byte(in), nil)
	if !gjson.ValidBytes(out) {
		t.Fatalf("%s→%s: invalid JSON out: %s", from, to, out)
	}
	return string(out), shapes(run.Warnings())
}

func TestTranslateInputUntranslatedIsTheSameBytes(t *testing.T) {
	in := []byte(` {"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"an activity"}],"forwardedProps":null} `)
	plan := negotiate.DecideInput(negotiate.Current, negotiate.Current)
	if plan.Translate {
		t.Fatalf("plan %+v translates", plan)
	}
	out, run := TranslateInput(plan, in, nil)
	if &out[0] != &in[0] || len(out) != len(in) {
		t.Errorf("untranslated input was copied or changed: %s", out)
	}
	if run.RunID != "r" || run.ThreadID != "t" || len(run.Warnings()) != 0 {
		t.Errorf("run %+v", run)
	}
}

func TestInputChainOrder(t *testing.T) {
	var names []string
	for _, s := range InputChain(negotiate.MustParse("0.0.39"), Registry()) {
		names = append(names, s.Name)
	}
	want := "drop-activity-input," + // upgrades, oldest first
		"tool-parts-to-text-input,file-source-parts-input,tools-context-required-input," + // then newest change first
		"strip-subagent-run-id-input,strip-resume-input,media-to-binary-input," +
		"strip-encrypted-value-input,drop-reasoning-input,flatten-content-input,strip-parent-run-id-input," +
		"unrecognised-input,python-input" // late (python-input: for a Python producer, in every chain)
	if got := strings.Join(names, ","); got != want {
		t.Errorf("chain\n got %s\nwant %s", got, want)
	}
	names = names[:0]
	for _, s := range InputChain(negotiate.Current, Registry()) {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "drop-activity-input,binary-to-media-input,null-means-absent-input,python-input" {
		t.Errorf("1.0 chain %s", got)
	}
}

func TestInputFromLegacyConsumer(t *testing.T) {
	in := `{"threadId":"t","runId":"r","state":null,"parentRunId":null,"messages":[` +
		`{"id":"a","role":"activity","activityType":"x","content":{}},` +
		`{"id":"u","role":"user","name":null,"content":[{"type":"text","text":"hi","id":null},{"type":"binary","mimeType":"image/png","data":"AA==","filename":"a.png"},{"type":"binary","mimeType":"x/y","id":"f1"}]},` +
		`{"id":"as","role":"assistant","content":null,"toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"metadata":null}]},` +
		`{"id":"s","role":"system","content":null}` +
		`],"tools":[{"name":"t","description":"d","parameters":null}],"context":[],"resume":[{"interruptId":"i","status":"resolved","payload":null}],"forwardedProps":null}`
	out, warns := inputTo(t, "0.0.45", "1.0", in)
	// parentRunId, name and assistant content nulls were malformed for
	// 0.0.45 itself (declared typed members; assistant content:null is
	// rejected by every release): not repaired.
	want := `{"threadId":"t","runId":"r","parentRunId":null,"messages":[` +
		`{"id":"u","role":"user","name":null,"content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"},"metadata":{"filename":"a.png"}}]},` +
		`{"id":"as","role":"assistant","content":null,"toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		// system content is required: its null is malformed, not repaired.
		`{"id":"s","role":"system","content":null}` +
		`],"tools":[{"name":"t","description":"d"}],"context":[],"resume":[{"interruptId":"i","status":"resolved"}],` +
		`"forwardedProps":null,"protocolVersion":"1.0"}`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if warns != "RunAgentInput.messages.content.binary(id only)×I" {
		t.Errorf("warnings %s", warns)
	}
}

func TestInputToOlderProducers(t *testing.T) {
	in := `{"threadId":"t","runId":"r","protocolVersion":"1.0","parentRunId":"p","messages":[` +
		`{"id":"a","role":"activity","activityType":"x","content":{}},` +
		`{"id":"u","role":"user","subagentRunId":"s","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"}},{"type":"document","source":{"type":"file","value":"f"}}]},` +
		`{"id":"r","role":"reasoning","content":"hm","encryptedValue":"E"},` +
		`{"id":"as","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"encryptedValue":"E"}]},` +
		`{"id":"tm","role":"tool","toolCallId":"c","content":[{"type":"text","text":"4"},{"type":"text","text":"2"},{"type":"audio","source":{"type":"url","value":"u"}}]}` +
		`],"resume":[{"interruptId":"i","status":"resolved"}],"forwardedProps":{"a":1}}`
	cases := []struct{ to, out, warns string }{
		{"0.0.59", `{"threadId":"t","runId":"r","parentRunId":"p","messages":[` +
			`{"id":"u","role":"user","subagentRunId":"s","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"}}]},` +
			`{"id":"r","role":"reasoning","content":"hm","encryptedValue":"E"},` +
			`{"id":"as","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"encryptedValue":"E"}]},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"42"}` +
			`],"resume":[{"interruptId":"i","status":"resolved"}],"forwardedProps":{"a":1},"tools":[],"context":[]}`,
			"RunAgentInput.messages.tool.content.audio×I,RunAgentInput.messages.content.source.file×I"},
		{"0.0.48", `{"threadId":"t","runId":"r","parentRunId":"p","messages":[` +
			`{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"binary","mimeType":"image/png","data":"AA=="}]},` +
			`{"id":"r","role":"reasoning","content":"hm","encryptedValue":"E"},` +
			`{"id":"as","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"encryptedValue":"E"}]},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"42"}` +
			`],"forwardedProps":{"a":1},"tools":[],"context":[]}`,
			"RunAgentInput.messages.tool.content.audio×I,RunAgentInput.messages.content.source.file×I,RunAgentInput.resume×I"},
		{"0.0.39", `{"threadId":"t","runId":"r","messages":[` +
			`{"id":"u","role":"user","content":"hi"},` +
			`{"id":"as","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"content":""},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"42"}` +
			`],"forwardedProps":{"a":1},"tools":[],"context":[]}`,
			"RunAgentInput.messages.tool.content.audio×I,RunAgentInput.messages.content.source.file×I,RunAgentInput.resume×I," +
				"RunAgentInput.messages.reasoning×I,RunAgentInput.messages.content.image×I"},
	}
	for _, c := range cases {
		out, warns := inputTo(t, "1.0", c.to, in)
		if out != c.out {
			t.Errorf("%s: got\n%s\nwant\n%s", c.to, out, c.out)
		}
		if warns != c.warns {
			t.Errorf("%s: warnings\n got %s\nwant %s", c.to, warns, c.warns)
		}
	}
}

func TestInputUnrecognisedOnlyTowardOlderProducers(t *testing.T) {
	in := `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x","metadata":{"k":1}}],"tools":[],"context":[],"extra":{"forwardedProps":1},"forwardedProps":{"extra":1}}`
	out, warns := inputTo(t, "1.0", "0.0.54", in)
	if want := `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"tools":[],"context":[],"forwardedProps":{"extra":1}}`; out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(warns, "metadata") || !strings.Contains(warns, "extra") {
		t.Errorf("warnings %s", warns)
	}
	// A producer newer than the consumer judges unknown material itself.
	out, _ = inputTo(t, "0.0.45", "0.0.54", in)
	if !strings.Contains(out, `"extra":{"forwardedProps":1}`) {
		t.Errorf("stripped toward a newer producer: %s", out)
	}
}

func TestInputMalformedIsNotRepaired(t *testing.T) {
	in := `{"threadId":"t","runId":"r","messages":[` +
		`{"id":"1","role":"user","content":[{"type":"text","text":7},{"type":"image","source":{"type":"data","value":"x","mimeType":"image/png"}}]},` +
		`{"id":"2","role":"user","content":null},` +
		`{"id":"3","role":"user","content":[{"type":"image","source":{"type":"data","value":"x"}}]}` +
		`],"tools":null,"context":[]}`
	// For 0.0.39 nothing is flattened: message 1 has a text part whose
	// text is no string, message 3 an image whose data source has no
	// mimeType; flattening either would repair it (dropping the bad part).
	out, _ := inputTo(t, "1.0", "0.0.39", in)
	want := in
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	// For 0.0.45 the media parts are unknown: the well-formed one becomes
	// binary; the malformed one (no mimeType) is not repaired into binary,
	// and goes as material a 0.0.45 producer does not recognise. (The live
	// relay refuses malformed input with 400 before it gets here.)
	out, warns := inputTo(t, "1.0", "0.0.45", in)
	want = `{"threadId":"t","runId":"r","messages":[` +
		`{"id":"1","role":"user","content":[{"type":"text","text":7},{"type":"binary","mimeType":"image/png","data":"x"}]},` +
		`{"id":"2","role":"user","content":null},` +
		`{"id":"3","role":"user","content":""}` +
		`],"tools":null,"context":[]}`
	if out != want || !strings.Contains(warns, "(image)") {
		t.Errorf("got\n%s\nwant\n%s\nwarnings %s", out, want, warns)
	}
}

// Activity messages never reach the producer, also when nothing else about
// the input needs translating; an input without them stays the same bytes.
func TestActivityMessagesNeverReachTheProducer(t *testing.T) {
	plan := negotiate.DecideInput(negotiate.Current, negotiate.Version{})
	if plan.Translate {
		t.Fatal("a current consumer and producer should need no translation")
	}
	in := []byte(`{"threadId":"t","runId":"r","messages":[{"id":"a1","role":"activity","activityType":"plan","content":{}},{"id":"u1","role":"user","content":"hi"}],"forwardedProps":{"k":null}}`)
	out, _ := TranslateInput(plan, in, nil)
	if want := `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}],"forwardedProps":{"k":null}}`; string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
	plain := []byte(`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"activity"}]}`)
	if out, _ := TranslateInput(plan, plain, nil); &out[0] != &plain[0] || string(out) != string(plain) {
		t.Errorf("an input without activity messages was rewritten: %s", out)
	}
}

// TestTranslateInputNotJSONIsTheSameBytes: an input that is not JSON goes
// back as it came, whatever the plan (FuzzInputTranslation found the
// activity step cutting a broken document it had half-read). The relay
// refuses such input before it gets here; no step may reshape it either.
func TestTranslateInputNotJSONIsTheSameBytes(t *testing.T) {
	for _, in := range []string{
		`{"messages"[{"role""activity"`,
		`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"activity","activityType":"x","content":{}}],}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"x"}]}]`,
	} {
		for _, to := range []string{"1.0", "0.0.39"} {
			plan := negotiate.DecideInput(negotiate.Current, negotiate.MustParse(to))
			out, _ := TranslateInput(plan, []byte(in), nil)
			if string(out) != in {
				t.Errorf("toward %s: %s became %s", to, in, out)
			}
		}
	}
}

// InputUnchanged: only an untranslated plan and an input without an
// "activity" string skip the translation; the translation then returns the
// input itself.
func TestInputUnchanged(t *testing.T) {
	same := negotiate.DecideInput(negotiate.Current, negotiate.Current)
	older := negotiate.DecideInput(negotiate.Current, negotiate.MustParse("0.0.39"))
	plain := `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}]}`
	activity := `{"threadId":"t","runId":"r","messages":[{"id":"a1","role":"activity","activityType":"plan","content":{}}]}`
	for _, tc := range []struct {
		plan negotiate.InputPlan
		in   string
		want bool
	}{
		{same, plain, true},
		{same, `{"messages":[{"id":"u1","role":"user","content":"activity"}]}`, false}, // the search is by bytes
		{same, activity, false},
		{same, `not JSON`, true},
		{older, plain, false},
	} {
		if got := InputUnchanged(tc.plan, []byte(tc.in)); got != tc.want {
			t.Errorf("InputUnchanged(translate %v, %s) = %v", tc.plan.Translate, tc.in, got)
		}
		if tc.want {
			in := []byte(tc.in)
			if out, run := TranslateInput(tc.plan, in, nil); &out[0] != &in[0] || len(out) != len(in) || len(run.Warnings()) > 0 {
				t.Errorf("%s: translated to %s", tc.in, out)
			}
		}
	}
	if out, _ := TranslateInput(same, []byte(activity), nil); strings.Contains(string(out), `"activity"`) {
		t.Errorf("activity kept: %s", out)
	}
}

// declareInput writes a missing protocolVersion as Declare does (sjson),
// whatever the blanks, members and nesting around it.
func TestDeclareInputAsDeclare(t *testing.T) {
	docs := []string{`{}`, `{ }`, "{\n}", ` {} `, ` {"a":1}`, "\n\t{\"a\":1 }\r\n", `{"a":1}`, `{"a":1 }`, "{\"a\":1\n}\n", `{ "a" : 1 , "b":[1] }`,
		`{"a":{"protocolVersion":"0.0.1"}}`, `{"threadId":"t","runId":"r","messages":[],"forwardedProps":{"protocolVersion":1}}`,
		`{"protocolVersion":"0.0.59"}`, `{"protocolVersion":null}`, `{"protocol\u0056ersion":"1.0"}`, `{"protocolVersion":"1.0"}`}
	for _, doc := range docs {
		for _, version := range []string{"1.0", "0.0.59", "2.0.0-rc.1+b", `1"0`, ""} {
			in := []byte(doc)
			plan := negotiate.InputPlan{Declare: negotiate.DeclareSet, Declared: version}
			root := Root(in)
			end := root.Index + len(root.Raw)
			want, _ := Declare(in[:end:end], plan.Declare, plan.Declared, nil)
			want = append(want, in[end:]...)
			read, _ := rules.ReadInput(in)
			if got := declareInput(in, root, plan, read.Member("protocolVersion") != ""); string(got) != string(want) {
				t.Errorf("%s, %q: %s, Declare %s", doc, version, got, want)
			}
			if string(in) != doc {
				t.Fatalf("%s changed in place", doc)
			}
		}
	}
}
