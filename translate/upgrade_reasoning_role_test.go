package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

func TestReasoningRoleUpgrade(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"assistant"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`},
		// Already current: the same bytes.
		{`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`},
		// Malformed roles are not repaired.
		{`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"narrator"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"narrator"}`},
		{`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":1}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":1}`},
	}
	for _, tc := range tests {
		c := EventChain(negotiate.Current, []*Step{reasoningRoleUpgrade})
		var got []string
		cr := c.Start(NewRun(Events, negotiate.Version{}, negotiate.Current, nil), negotiate.Plan{}, func(b, _ []byte) { got = append(got, string(b)) })
		cr.Push([]byte(tc.in))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s -> %q, want %s", tc.in, got, tc.want)
		}
	}
	if reasoningRoleUpgrade.Applies(negotiate.MustParse("0.0.44")) || !reasoningRoleUpgrade.Applies(negotiate.MustParse("0.0.45")) {
		t.Error("the upgrade must run exactly for consumers that read REASONING_* (0.0.45 on)")
	}
}
