package translate

import (
	"bytes"
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

	// What splice last wrote in place of the old type, and for which new
	// type and id: a message's every delta gets the same. head lives in
	// headBuf unless the id is long.
	headType, headID string
	head             []byte
	headBuf          [96]byte
}

// thinkingEvent is what the step makes of one THINKING_* type.
type thinkingEvent struct {
	typ, newType string  // constants: no copy of the borrowed type per event
	cur          *string // the id slot this event opens, continues or closes
	opens        bool
	closes       bool
}

// classify returns what typ becomes; ok is false for a type not the step's.
func (t *thinkingRun) classify(typ []byte) (e thinkingEvent, ok bool) {
	switch string(typ) {
	case "THINKING_START":
		return thinkingEvent{"THINKING_START", "REASONING_START", &t.span, true, false}, true
	case "THINKING_END":
		return thinkingEvent{"THINKING_END", "REASONING_END", &t.span, false, true}, true
	case "THINKING_TEXT_MESSAGE_START":
		return thinkingEvent{"THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START", &t.msg, true, false}, true
	case "THINKING_TEXT_MESSAGE_CONTENT":
		return thinkingEvent{"THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", &t.msg, false, false}, true
	case "THINKING_TEXT_MESSAGE_END":
		return thinkingEvent{"THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END", &t.msg, false, true}, true
	}
	return thinkingEvent{}, false
}

func (t *thinkingRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	e, ok := t.classify(r.EventType())
	switch {
	case !ok:
		emit(ev)
	case t.plain(ev, e.typ):
		t.splice(r, ev, e, emit)
	default:
		t.rewrite(r, ev, e, emit)
	}
}

// rewrite is Apply for any event: it reads every member, as the step's
// rules need in general.
func (t *thinkingRun) rewrite(r *Run, ev []byte, e thinkingEvent, emit func([]byte)) {
	typ, newType, cur, opens, closes := e.typ, e.newType, e.cur, e.opens, e.closes
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
	if own.Type == gjson.String && own.Str != "" {
		// Str aliases the borrowed event; the id outlives it in the run.
		id, insertID = strings.Clone(own.Str), false
	} else {
		id = t.id(r, typ, cur, opens)
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

// id returns the id of an event that carries none of its own: the open
// span's or message's (cur), else a derived one.
func (t *thinkingRun) id(r *Run, typ string, cur *string, opens bool) string {
	if !opens && *cur != "" {
		return *cur
	}
	id := r.MintID("reasoning")
	r.Lost("REASONING_*.messageId (derived)",
		"THINKING_* carries no ids; the ids REASONING_* requires were derived from the run id, the same for every replay of the stream",
		thinkingUpgrade)
	if !opens {
		r.Lost(typ+" without opener",
			"a continuation or end with no open THINKING span or message was given a derived id; a 1.0 consumer rejects it, as it would the original",
			thinkingUpgrade)
	}
	return id
}

var titleKey, roleKey = []byte("title"), []byte("role")

// plainLead is how every AG-UI encoder starts an event: the type first, no
// whitespace.
const plainLead = `{"type":"`

// plain reports whether ev, of type typ, is the common shape that splice
// rewrites exactly as rewrite would: it starts with the type,
// unescaped, and no member after it is one the step reads or reshapes (a
// messageId; a title on THINKING_START; a role on
// THINKING_TEXT_MESSAGE_START). The members are not parsed: none of those
// keys may appear anywhere in the bytes after the type, and neither may an
// escape that decodes to a letter (\u0040–\u007f), through which a key
// could spell one of them; gjson's unescape yields no letter any other way
// (a key it cuts short at a bad escape or a control byte still spells the
// name out literally). Whatever else follows the type, rewrite copies it as
// it is, and so does splice.
func (t *thinkingRun) plain(ev []byte, typ string) bool {
	n := len(plainLead) + len(typ)
	if len(ev) <= n || string(ev[:len(plainLead)]) != plainLead || string(ev[len(plainLead):n]) != typ || ev[n] != '"' {
		return false
	}
	rest := ev[n+1:]
	// Every content event is searched: by the I, which text seldom holds.
	if indexRare(rest, "messageId", 7) >= 0 {
		return false
	}
	switch typ {
	case "THINKING_START":
		if bytes.Contains(rest, titleKey) {
			return false
		}
	case "THINKING_TEXT_MESSAGE_START":
		if bytes.Contains(rest, roleKey) {
			return false
		}
	}
	for from := 0; ; {
		i := bytes.IndexByte(rest[from:], '\\')
		if i < 0 {
			return true
		}
		i += from
		// Even an escaped backslash's u0041 counts: no parse, no doubt.
		if i+5 < len(rest) && rest[i+1] == 'u' && rest[i+2] == '0' && rest[i+3] == '0' && rest[i+4] >= '4' && rest[i+4] <= '7' {
			return false
		}
		from = i + 1
	}
}

// splice is Apply for a plain event: the old type's value becomes the new
// type followed by the id (and the role a message start requires), written
// with two appends into the step's buffer, which the emitted event borrows
// until the step's next event.
func (t *thinkingRun) splice(r *Run, ev []byte, e thinkingEvent, emit func([]byte)) {
	typ := e.typ
	id := t.id(r, typ, e.cur, e.opens)
	if e.closes {
		*e.cur = ""
	} else {
		*e.cur = id
	}
	if t.head == nil || e.newType != t.headType || id != t.headID {
		h := append(t.headBuf[:0], plainLead...)
		h = append(h, e.newType...)
		h = append(h, `","messageId":`...)
		h = AppendJSONString(h, id)
		if typ == "THINKING_TEXT_MESSAGE_START" {
			h = append(h, `,"role":"reasoning"`...)
		}
		t.head, t.headType, t.headID = h, e.newType, id
	}
	// ev is plainLead, the old type, its closing quote, then the rest.
	b := append(t.buf[:0], t.head...)
	b = append(b, ev[len(plainLead)+len(typ)+1:]...)
	t.buf = b
	r.Translated(typ)
	emit(b)
}
