package translate

import (
	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// emptyDelta drops, for consumers older than 0.0.50, the content events whose
// delta is the empty string: TEXT_MESSAGE_CONTENT,
// REASONING_MESSAGE_CONTENT and THINKING_TEXT_MESSAGE_CONTENT.
//
// Lossless and silent: an empty delta adds nothing to the message (producers
// send them as keep-alives). Only the string "" is dropped; a missing or
// non-string delta is malformed and passes on for the consumer to report,
// and so does the empty delta of a producer known to predate 0.0.50, whose
// own schema rejected it (a downgrade does not repair).
//
// Reference consumer: clients before 0.0.50 refine the delta with "Delta
// must not be an empty string", so one empty delta fails the whole run
// (legacy-profiles §2, case empty_delta). Chunk events are not concerned:
// their delta has no such refinement, and the reasoning downgrade
// (v0_0_45_reasoning.go) never expands an empty chunk delta into a content
// event.
var emptyDelta = &Step{
	Name:        "drop-empty-delta",
	Description: "content events with an empty delta are dropped for consumers that reject them",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 50},
	Types:       []string{"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_CONTENT"},
	NewEvent:    func() EventStep { return &emptyDeltaRun{} },
}

// emptyDeltaRun judges each event on its own. It keeps, to judge the next
// event sooner, the bytes of the last one up to the value of its delta
// (Apply reads the first delta member, as gjson does): a message's deltas
// share those bytes, and an event that starts with them has its delta there.
type emptyDeltaRun struct {
	prefix []byte
}

// maxDeltaPrefix bounds the prefix kept: a longer one is read each time.
const maxDeltaPrefix = 256

// Wants: a first top-level delta that is the empty string. The prefix read
// from the last event answers with a comparison; a new one is read from the
// event's members (which the other steps share). An event that does not
// read as an object, or names a key with an escape before its delta (it
// may be "delta"), is wanted when an empty string is anywhere in it
// (searched eight bytes at a time), and left to the chain's gate.
func (e *emptyDeltaRun) Wants(r *Run, _, ev []byte) bool {
	if n := len(e.prefix); n > 0 && len(ev) > n+1 && string(ev[:n]) == string(e.prefix) {
		return ev[n] == '"' && ev[n+1] == '"'
	}
	e.prefix = e.prefix[:0]
	ms, ok := r.members(ev)
	if !ok {
		return indexPair(ev, '"', '"') >= 0
	}
	for i := range ms {
		m := &ms[i]
		if m.escaped {
			return indexPair(ev, '"', '"') >= 0
		}
		if m.is(ev, "delta") {
			if m.val <= maxDeltaPrefix {
				e.prefix = append(e.prefix, ev[:m.val]...)
			}
			return string(ev[m.val:m.end]) == `""`
		}
	}
	return false
}

// emptyDeltaSince is the first release whose schema allows an empty delta.
var emptyDeltaSince = negotiate.Version{Patch: 50}

func (*emptyDeltaRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	d := Get(ev, "delta")
	if d.Type == gjson.String && d.Raw == `""` && (r.From.IsZero() || r.From.AtLeast(emptyDeltaSince)) {
		switch string(r.EventType()) { // constant shapes: nothing allocated per event
		case "TEXT_MESSAGE_CONTENT":
			r.Translated(`TEXT_MESSAGE_CONTENT.delta:""`)
		case "REASONING_MESSAGE_CONTENT":
			r.Translated(`REASONING_MESSAGE_CONTENT.delta:""`)
		default:
			r.Translated(`THINKING_TEXT_MESSAGE_CONTENT.delta:""`)
		}
		return
	}
	emit(ev)
}
