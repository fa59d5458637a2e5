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
