package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// subagents downgrades subagents (new in 0.0.59) for older consumers:
// SUBAGENT_STARTED, SUBAGENT_FINISHED and SUBAGENT_ERROR are dropped, and
// subagentRunId is removed from every event, from the messages of
// MESSAGES_SNAPSHOT and RUN_STARTED.input and from RUN_FINISHED interrupts.
//
// Lossy for the lifecycle events (a subagent's name, description, result,
// error and suspension are what a reader would have seen): one warning per
// event type. Removing subagentRunId is lossless and silent, as the
// versioning draft says: the events still arrive and flatten into one
// thread. Older consumers fail the whole run on an unknown event type, and
// 0.0.54–0.0.58 on an unknown member of an interrupt's strict outcome.
//
// Reference consumer: the 1.0 client's BackwardCompatibility_0_0_57 shim
// does exactly this (warning on the dropped events, silent on the tags).
var subagents = &Step{
	Name:        "subagents",
	Description: "SUBAGENT_* events are dropped and subagentRunId tags removed for consumers without subagents",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 59},
	Lossy:       true,
	Types:       nil, // a subagentRunId may be on any event; the bytes are filtered first
	NewEvent:    func() EventStep { return &subagentsRun{} },
}

var (
	subagentTag   = []byte("subagentRunId")
	subagentEvent = []byte("SUBAGENT_")
)

type subagentsRun struct {
	rewriter
	inner []Item
}

// Wants: SUBAGENT_* events, and events that mention a subagentRunId.
func (s *subagentsRun) Wants(_ *Run, typ, ev []byte) bool {
	return bytes.HasPrefix(typ, subagentEvent) || bytes.Contains(ev, subagentTag)
}

func (s *subagentsRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := r.EventType()
	if bytes.HasPrefix(typ, subagentEvent) {
		switch t := string(typ); t {
		case "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
			r.Lost(t, "@ag-ui/client "+r.To.String()+" predates subagents and fails the whole run on "+t+"; the subagent's own events still arrive, flattened into the run",
				"@ag-ui/client 0.0.59 or newer")
			return
		}
	}
	if !bytes.Contains(ev, subagentTag) {
		emit(ev)
		return
	}
	s.dropTag(r, Root(ev), "subagentRunId")
	switch string(typ) {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED":
		msgs, shape := messagesOf(ev, string(typ))
		EachElement(msgs, func(_ int, m gjson.Result) { s.dropTag(r, m, shape+".subagentRunId") })
	case "RUN_FINISHED":
		EachElement(Get(ev, "outcome.interrupts"), func(_ int, in gjson.Result) {
			s.dropTag(r, in, "RUN_FINISHED.outcome.interrupts.subagentRunId")
		})
	}
	s.emit(ev, emit)
}

// dropTag records the removal of obj's subagentRunId members.
func (s *subagentsRun) dropTag(r *Run, obj gjson.Result, shape string) {
	if !obj.IsObject() {
		return
	}
	s.inner = Items(obj, s.inner[:0])
	s.ed.DeleteItems(s.inner, func(i int) bool {
		if s.inner[i].Key.Str != "subagentRunId" {
			return false
		}
		if shape == "subagentRunId" {
			r.Translated("subagentRunId")
		} else {
			r.Translated(shape)
		}
		return true
	})
}
