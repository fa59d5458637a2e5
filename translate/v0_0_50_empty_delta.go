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
	NewEvent:    func() EventStep { return emptyDeltaRun{} },
}

// emptyDeltaRun keeps no state: each event is judged on its own.
type emptyDeltaRun struct{}

// Wants: an empty delta is an empty string somewhere in the event; content
// events without one pass untouched.
// Every member of an event is quoted: the pair is searched eight bytes at a
// time rather than stopping at each quote.
func (emptyDeltaRun) Wants(_ *Run, _, ev []byte) bool { return indexPair(ev, '"', '"') >= 0 }

// emptyDeltaSince is the first release whose schema allows an empty delta.
var emptyDeltaSince = negotiate.Version{Patch: 50}

func (emptyDeltaRun) Apply(r *Run, ev []byte, emit func([]byte)) {
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
