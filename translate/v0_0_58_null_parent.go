package translate

import (
	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// nullParentMessageID removes parentMessageId:null from TOOL_CALL_START and
// TOOL_CALL_CHUNK for consumers older than 0.0.58, which fail the whole run
// on it; 0.0.58 made that null mean "absent" (and 1.0's client reads it the
// same way).
//
// Lossless and silent: the null meant absent. It is removed whatever the
// producer, except one known to predate 0.0.58, for which the null is
// malformed and passes on (a downgrade does not repair).
//
// The other 0.0.58 addition, usage on RUN_FINISHED/RUN_ERROR, needs nothing:
// older consumers strip it (≤0.0.42) or keep and ignore it (0.0.43–0.0.57),
// so a RUN_FINISHED with usage reaches them unchanged.
var nullParentMessageID = &Step{
	Name:        "null-parent-message-id",
	Description: "parentMessageId:null on tool-call events is removed for consumers that reject it",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 58},
	Types:       []string{"TOOL_CALL_START", "TOOL_CALL_CHUNK"},
	NewEvent:    func() EventStep { return &nullParentRun{} },
}

type nullParentRun struct {
	rewriter
}

var nullParentSince = negotiate.Version{Patch: 58}

func (n *nullParentRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if p := Get(ev, "parentMessageId"); p.Type != gjson.Null || !p.Exists() ||
		(!r.From.IsZero() && r.From.Less(nullParentSince)) {
		emit(ev)
		return
	}
	n.items = dropNullMember(r, &n.ed, n.items, Root(ev), "parentMessageId", "parentMessageId:null")
	n.emit(ev, emit)
}
