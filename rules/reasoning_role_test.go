package rules

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// REASONING_MESSAGE_START.role "assistant" is a retired shape wherever the
// event exists; any other wrong role stays malformed.
func TestReasoningRoleAssistantIsRetired(t *testing.T) {
	old := []byte(`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"assistant"}`)
	bad := []byte(`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"narrator"}`)
	for _, v := range []string{"0.0.45", "0.0.54", "0.0.59", "1.0"} {
		j := JudgeEvent(negotiate.MustParse(v), old)
		if j.Verdict != Retired || len(j.Findings) != 1 || j.Findings[0].Shape != ReasoningRoleAssistant || j.Findings[0].Pointer != "/role" {
			t.Errorf("%s: role assistant judged %+v", v, j)
		}
		if j := JudgeEvent(negotiate.MustParse(v), bad); j.Verdict != Malformed {
			t.Errorf("%s: role narrator judged %v, want malformed", v, j.Verdict)
		}
	}
	if _, ok := LookupDeprecation(ReasoningRoleAssistant); !ok {
		t.Error("the retired role is not in the registry")
	}
}
