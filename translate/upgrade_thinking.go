package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// thinkingToReasoning upgrades the retired THINKING_* events to REASONING_*
// for consumers that read REASONING_* (0.0.45 and newer).
//
// Lossy: THINKING_START.title has no place in REASONING_START and is dropped
// with a warning. REASONING_* requires span and message ids that the retired
// events never carried: they are derived from the run (Run.MintID), so the
// same stream always gives the same ids, and a warning says they were
// derived. An id the producer did put on a THINKING event is kept. A
// continuation or end with no opener gets a derived id and its own warning
// (a 1.0 consumer's verifier then rejects it, as it would the original).
//
// Reference consumer: the 1.0 client's CompatibilityBoundary does the same
// mapping on the raw stream (with random UUIDs, so its ids differ per
// replay); 0.0.46–0.0.59 accept THINKING_* but never materialise it, so the
// upgrade gives them reasoning messages; 0.0.45 translates it itself.
var thinkingToReasoning = &Step{
	Name:        "thinking-to-reasoning",
	Description: "THINKING_* (retired) becomes REASONING_* with ids derived from the run; THINKING_START.title is dropped",
	Kind:        Upgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 45},
	Lossy:       true,
	Types: []string{"THINKING_START", "THINKING_END", "THINKING_TEXT_MESSAGE_START",
		"THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END"},
	NewEvent: func() EventStep { return &thinkingRun{} },
}

const thinkingUpgrade = "a producer that emits REASONING_* (AG-UI 0.0.45 or newer)"

type thinkingRun struct {
	rewriter
	span, msg string // ids of the open reasoning span and message
}

func (t *thinkingRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	var (
		typ, newType string  // constants: no copy of the borrowed type per event
		cur          *string // the id slot this event opens, continues or closes
		opens        bool
		closes       bool
	)
	switch string(r.EventType()) {
	case "THINKING_START":
		typ, newType, cur, opens = "THINKING_START", "REASONING_START", &t.span, true
	case "THINKING_END":
		typ, newType, cur, closes = "THINKING_END", "REASONING_END", &t.span, true
	case "THINKING_TEXT_MESSAGE_START":
		typ, newType, cur, opens = "THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START", &t.msg, true
	case "THINKING_TEXT_MESSAGE_CONTENT":
		typ, newType, cur = "THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", &t.msg
	case "THINKING_TEXT_MESSAGE_END":
		typ, newType, cur, closes = "THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END", &t.msg, true
	default:
		emit(ev)
		return
	}
	root := Root(ev)
	typeVal := Get(ev, "type")
	if !root.IsObject() || typeVal.Index <= 0 {
		emit(ev) // malformed: not ours to repair
		return
	}

	// The id: the producer's own when it put one on the event, else the
	// open span's or message's, else a derived one.
	own := Get(ev, "messageId")
	id, insertID := "", true
	switch {
	case own.Type == gjson.String && own.Str != "":
		// Str aliases the borrowed event; the id outlives it in the run.
		id, insertID = strings.Clone(own.Str), false
	case !opens && *cur != "":
		id = *cur
	default:
		id = r.MintID("reasoning")
		r.Lost("REASONING_*.messageId (derived)",
			"THINKING_* carries no ids; the ids REASONING_* requires were derived from the run id, the same for every replay of the stream",
			thinkingUpgrade)
		if !opens {
			r.Lost(typ+" without opener",
				"a continuation or end with no open THINKING span or message was given a derived id; a 1.0 consumer rejects it, as it would the original",
				thinkingUpgrade)
		}
	}
	if closes {
		*cur = ""
	} else {
		*cur = id
	}

	w := &t.rewriter
	w.items = Items(root, w.items[:0])
	isMsgStart := typ == "THINKING_TEXT_MESSAGE_START"
	hasRole := false
	for _, it := range w.items {
		v := it.Value
		switch it.Key.Str {
		case "title":
			if typ == "THINKING_START" && !(v.Type == gjson.String && v.Str == "") {
				r.Lost("THINKING_START.title", "REASONING_START has no title", thinkingUpgrade)
			}
		case "role":
			if isMsgStart {
				hasRole = true
				if !(v.Type == gjson.String && v.Str == "reasoning") {
					w.ed.SetValueString(v, `"reasoning"`) // REASONING_MESSAGE_START.role is the literal "reasoning"
				}
			}
		}
	}
	// A non-string messageId is not an id: it makes way for the derived one.
	w.ed.DeleteItems(w.items, func(i int) bool {
		k := w.items[i].Key.Str
		return (k == "title" && typ == "THINKING_START") || (k == "messageId" && insertID)
	})

	// The new type, followed by what REASONING_* requires and the retired
	// shape lacked, spliced in place of the old type's value.
	mark := w.ed.Begin()
	w.ed.AppendString(`"`)
	w.ed.AppendString(newType)
	w.ed.AppendString(`"`)
	if insertID {
		w.ed.AppendString(`,"messageId":`)
		w.ed.AppendJSONString(id)
	}
	if isMsgStart && !hasRole {
		w.ed.AppendString(`,"role":"reasoning"`)
	}
	w.ed.Commit(typeVal.Index, typeVal.Index+len(typeVal.Raw), mark)
	r.Translated(typ)
	w.emit(ev, emit)
}
