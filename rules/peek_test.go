package rules

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

// consumerType is the type a JavaScript consumer reads from ev, by
// encoding/json, which like JSON.parse keeps the last of a repeated key:
// the raw text between the quotes of a string, ok false when ev is not a
// JSON object.
func consumerType(ev []byte) (typ string, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(ev, &m) != nil {
		return "", false
	}
	if raw := m["type"]; len(raw) >= 2 && raw[0] == '"' {
		return string(raw[1 : len(raw)-1]), true
	}
	return "", true
}

// The fast path of PeekType must agree with a full parse on every shape of
// event, including those it leaves to the walk. An event that names its
// type once is read as gjson reads it.
func TestPeekTypeAgreesWithGjson(t *testing.T) {
	for _, ev := range []string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`,
		`{ "type" : "RUN_STARTED" }`,
		`{"messageId":"m","type":"TEXT_MESSAGE_END"}`,
		`{"type":"A\"B","x":1}`,
		`{"type":"","x":1}`,
		`{"type":7}`,
		`{"type":"`,
		`{"typ":"X"}`,
		`[1,2]`,
		``,
	} {
		got := PeekType([]byte(ev))
		r := gjson.Get(ev, "type")
		want := ""
		if r.Type == gjson.String && len(r.Raw) >= 2 {
			want = r.Raw[1 : len(r.Raw)-1]
		}
		if string(got) != want {
			t.Errorf("PeekType(%s) = %q, want %q", ev, got, want)
		}
	}
}

// An event that names its type twice is of the last type, as JSON.parse
// reads it (issue #31), however the second is written; a "type" anywhere
// but at the top level, or in a string, names nothing.
func TestPeekTypeTakesTheLastTypeAsTheConsumerDoes(t *testing.T) {
	for _, tc := range []struct{ ev, want string }{
		{`{"type":"RAW","type":"CUSTOM"}`, "CUSTOM"},
		{`{"type":"TEXT_MESSAGE_START","messageId":"m","type":"RUN_FINISHED","threadId":"t","runId":"r"}`, "RUN_FINISHED"},
		{`{"type":"TEXT_MESSAGE_START", "type" : "RUN_FINISHED"}`, "RUN_FINISHED"},
		{`{ "type":"A","type":"B","type":"C" }`, "C"},
		{`{"type":"TEXT_MESSAGE_START","typ\u0065":"RUN_FINISHED"}`, "RUN_FINISHED"},
		{`{"type":"TEXT_MESSAGE_START","\u0074\u0079\u0070\u0065":"RUN_ERROR"}`, "RUN_ERROR"},
		{`{"typ\u0065":"RUN_ERROR","type":"RUN_FINISHED"}`, "RUN_FINISHED"},
		{`{"type":"RUN_FINISHED","type":7}`, ""},
		{`{"type":7,"type":"RUN_FINISHED"}`, "RUN_FINISHED"},
		{`{"type":"TEXT_MESSAGE_CONTENT","delta":"say \"type\": \"RUN_FINISHED\""}`, "TEXT_MESSAGE_CONTENT"},
		{`{"type":"TEXT_MESSAGE_CONTENT","delta":"the \"type","x":1}`, "TEXT_MESSAGE_CONTENT"},
		{`{"type":"TEXT_MESSAGE_CONTENT","delta":"caf\u00e9 \u0074ype"}`, "TEXT_MESSAGE_CONTENT"},
		{`{"type":"TOOL_CALL_RESULT","content":{"type":"RUN_FINISHED"},"x":[{"type":"RUN_ERROR"}]}`, "TOOL_CALL_RESULT"},
		{`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/type","value":"RUN_FINISHED"}]}`, "STATE_DELTA"},
		{`{"typeX":"RUN_FINISHED","type":"RAW"}`, "RAW"},
	} {
		got := PeekType([]byte(tc.ev))
		if string(got) != tc.want {
			t.Errorf("PeekType(%s) = %q, want %q", tc.ev, got, tc.want)
		}
		if want, ok := consumerType([]byte(tc.ev)); !ok || want != tc.want {
			t.Errorf("the case is wrong: a consumer reads %s as %q (JSON: %v)", tc.ev, want, ok)
		}
	}
}

// Every valid JSON document of the validator's seeds is typed as a
// consumer types it.
func TestPeekTypeAgreesWithTheConsumerOnSeeds(t *testing.T) {
	n := 0
	for _, doc := range append(validSeeds(), readInputSeeds()...) {
		want, ok := consumerType([]byte(doc))
		if !ok {
			continue
		}
		n++
		if got := PeekType([]byte(doc)); string(got) != want {
			t.Errorf("PeekType(%.80s) = %q, want %q", doc, got, want)
		}
	}
	if n < 10 {
		t.Fatalf("only %d objects checked", n)
	}
}

// FuzzPeekType peeks at any bytes. Properties: no panic; the result is a
// slice of the event; for a JSON object, the type a consumer reads.
func FuzzPeekType(f *testing.F) {
	for _, s := range []string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`,
		`{"type":"A","type":"B"}`, `{"type":"A","typ\u0065":"B"}`, `{"type":"A","x":{"type":"B"}}`,
		`{"type":"A","d":"\"type\""}`, `{"type":"A`, `{"type":"\"`, `{"\`, `{"type":"A","\u00`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		got := PeekType(ev)
		if !within(got, ev) {
			t.Fatalf("PeekType(%q) = %q, not a slice of the event", ev, got)
		}
		if want, ok := consumerType(ev); ok && string(got) != want {
			t.Fatalf("PeekType(%q) = %q, a consumer reads %q", ev, got, want)
		}
	})
}

// within reports whether sub lies inside b's bytes.
func within(sub, b []byte) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i+len(sub) <= len(b); i++ {
		if &b[i] == &sub[0] {
			return true
		}
	}
	return false
}
