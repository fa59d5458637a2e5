package rules

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

func TestMalformedPart(t *testing.T) {
	cases := []struct {
		part string
		want bool
	}{
		{`{"type":"text","text":"a"}`, false},
		{`{"type":"image","source":{"type":"url","value":"u"}}`, false},
		{`{"type":"image","source":{"type":"data","value":"x","mimeType":"image/png"},"metadata":null}`, false}, // retired null
		{`{"type":"binary","mimeType":"image/png","data":"x"}`, false},                                          // retired member
		{`{"type":"binary","id":"i"}`, false},                                                                   // unknown material in 1.0
		{`{"type":"hologram","beam":1}`, false},                                                                 // unknown type
		{`{"type":"text","text":"a","extra":1}`, false},                                                         // unknown member
		{`{"type":"image"}`, true},
		{`{"type":"image","source":{}}`, true},
		{`{"type":"image","source":{"type":"data","value":"x"}}`, true},
		{`{"type":"text","text":5}`, true},
		{`{"type":"text"}`, true},
		{`{"type":5}`, true},
		{`{"text":"a"}`, true},
		{`"loose"`, true},
		{`[]`, true},
		{`{"type":"text","text":"a"`, true},
		{``, true},
	}
	for _, c := range cases {
		if got := MalformedPart(negotiate.Current, []byte(c.part)); got != c.want {
			t.Errorf("MalformedPart(%s) = %v, want %v", c.part, got, c.want)
		}
	}
	// Before 0.0.41 there are no parts to judge beyond their basic kinds.
	if MalformedPart(negotiate.MustParse("0.0.37"), []byte(`{"type":"image"}`)) {
		t.Error("0.0.37: an image part judged malformed")
	}
}

// MalformedMember judges one member of a union as the events that hold it
// would: a known kind with a value its schema rejects is malformed, an
// unknown kind is not, and neither is anything of a union the version lacks.
func TestMalformedMember(t *testing.T) {
	v1, old := negotiate.Current, negotiate.MustParse("0.0.37")
	for _, tc := range []struct {
		v     negotiate.Version
		union string
		raw   string
		want  bool
	}{
		{v1, "Message", `{"id":"m","role":"user","content":"hi"}`, false},
		{v1, "Message", `{"id":"m","role":"user"}`, true}, // no content
		{v1, "Message", `{"id":"m","role":"oracle","x":1}`, false},
		{v1, "Message", `{"id":"m"}`, true}, // no role
		{v1, "Message", `[1]`, true},
		{v1, "ContentPart", `{"type":"document"}`, true}, // no source
		{v1, "ContentPart", `{"type":"document","source":{"type":"url","value":"u"}}`, false},
		{v1, "Outcome", `{"type":"success"}`, false},
		{v1, "Outcome", `{"type":"mystery","k":1}`, false},
		{v1, "Outcome", `{"type":"interrupt","interrupts":[]}`, true}, // at least one
		{old, "Outcome", `{"type":"success"}`, false},                 // no outcomes in 0.0.37
	} {
		if got := MalformedMember(tc.v, tc.union, []byte(tc.raw)); got != tc.want {
			t.Errorf("MalformedMember(%s, %s, %s) = %v, want %v", tc.v, tc.union, tc.raw, got, tc.want)
		}
	}
}
