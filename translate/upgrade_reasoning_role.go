package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// reasoningRoleUpgrade upgrades REASONING_MESSAGE_START events whose role is
// "assistant" to the literal "reasoning" every reader from 0.0.45 on
// requires. Python SDK releases of the 0.0.x era sent "assistant" (ag-ui
// issue 1169, fixed in PRs 1193/1200), and the TypeScript consumers failed
// the whole run on it.
//
// Lossless and silent: the event already says it opens a reasoning message;
// the old role carried nothing more. Any other wrong role is malformed and
// passes on untouched (a translation never repairs).
var reasoningRoleUpgrade = &Step{
	Name:        rules.StepReasoningRole,
	Description: `REASONING_MESSAGE_START.role "assistant", sent by 0.0.x Python producers, becomes the required "reasoning"`,
	Kind:        Upgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 45},
	Types:       []string{"REASONING_MESSAGE_START"},
	NewEvent:    func() EventStep { return &reasoningRoleRun{} },
}

type reasoningRoleRun struct{ rewriter }

func (s *reasoningRoleRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	role := Get(ev, "role")
	if role.Raw == `"assistant"` {
		s.ed.SetValueString(role, `"reasoning"`)
		r.Translated(rules.ReasoningRoleAssistant)
	}
	s.emit(ev, emit)
}
