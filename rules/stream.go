package rules

import (
	"bytes"
	"sort"
	"strings"
	"unsafe"

	"github.com/agui-relay/agui-relay/negotiate"
)

// StreamFault is a sequence fault: an event that is well formed on its own
// but that a consumer's verifier rejects where it stands.
type StreamFault struct {
	// Index is the event's position in the stream, from 0.
	Index int
	// Rule names the sequence rule: "first-event", "run-started-twice",
	// "after-run-error", "after-run-finished", "one-run-per-stream",
	// "step-started-twice", "step-not-started", "message-started-twice",
	// "message-not-started", "tool-call-started-twice",
	// "tool-call-not-started", "open-at-run-finished".
	Rule string
	// Detail says what happened, Hint its likely cause at the producer.
	Detail, Hint string
}

// Stream checks the sequence rules of a consumer's verifier
// (protocol-1.0.md §2.15, legacy-profiles.md §3.6) event by event. It does
// not expand chunks, so messages opened by chunk events are not tracked.
type Stream struct {
	v                      negotiate.Version
	schema                 *schema      // v's, looked up once
	lastType               string       // the last known type, the schema's own string: most events repeat it
	flat                   []flatAction // NextFlat's, by type, as met
	flatLast               int          // the one it last took, -1: none
	n                      int
	runs                   int
	active, errored, ended bool
	steps                  map[string]bool
	texts, tools           openSet
}

// openSet is the ids of the open messages or of the open tool calls: a
// list while they are few (a stream has one or two open at once), a map
// past maxListed. last, when not "", is one of them (the last started),
// compared first: continuation events mostly name the one just started.
type openSet struct {
	ids       []string
	m         map[string]bool // nil while ids holds them
	last      string
	lastPlain bool // last has no quote or backslash: a raw id equal to it is it
	// text holds the copies of the ids added (one block, not an
	// allocation each), reused once clear has let go of them all: the set
	// hands none of them out.
	text []byte
}

// maxListed is how many open ids an openSet keeps in its list.
const maxListed = 8

func (o *openSet) has(id string) bool {
	switch {
	case id == o.last && id != "":
		return true
	case o.m != nil:
		return o.m[id]
	}
	for _, k := range o.ids {
		if k == id {
			return true
		}
	}
	return false
}

func (o *openSet) add(id string) {
	k := o.keep(id) // id is borrowed from the event
	switch {
	case o.has(k):
	case o.m != nil:
		o.m[k] = true
	case len(o.ids) < maxListed:
		o.ids = append(o.ids, k)
	default:
		o.m = map[string]bool{k: true}
		for _, k := range o.ids {
			o.m[k] = true
		}
		o.ids = o.ids[:0]
	}
	o.last = k
	o.lastPlain = strings.IndexByte(k, '"') < 0 && strings.IndexByte(k, '\\') < 0
}

// keep returns a copy of id in text. A block too small is replaced by a
// larger one: the ids kept in it keep it.
func (o *openSet) keep(id string) string {
	if id == "" {
		return ""
	}
	if cap(o.text)-len(o.text) < len(id) {
		o.text = make([]byte, 0, max(2*cap(o.text), 256, len(id)))
	}
	n := len(o.text)
	o.text = append(o.text, id...)
	return unsafe.String(&o.text[n], len(id))
}

func (o *openSet) del(id string) {
	if o.m != nil {
		delete(o.m, id)
	}
	for i, k := range o.ids {
		if k == id {
			o.ids[i] = o.ids[len(o.ids)-1]
			o.ids = o.ids[:len(o.ids)-1]
			break
		}
	}
	if id == o.last {
		o.last = ""
	}
}

func (o *openSet) clear() {
	o.ids, o.m, o.last, o.text = o.ids[:0], nil, "", o.text[:0]
}

// each calls fn with every open id.
func (o *openSet) each(fn func(id string)) {
	for k := range o.m {
		fn(k)
	}
	for _, k := range o.ids {
		fn(k)
	}
}

// flatAction is what the sequence rules do with an event of one type that
// NextFlat takes: pair kind (0: only the run's state is checked; else
// pairStart, pairContinue or pairEnd) on open, by the id under the
// event's second member, key. head is the event's text up to its members
// after the type (kind 0), or up to the id: {"type":"<typ>" or
// {"type":"<typ>","<key>":".
type flatAction struct {
	typ, head string
	kind      int
	open      *openSet
}

const (
	pairStart = 1 + iota
	pairContinue
	pairEnd
)

// flatActionOf returns what NextFlat does with an event of type typ, nil
// for the types it leaves to NextOfType: those the schema does not know,
// and those with rules of their own (RUN_*, STEP_*).
func (s *Stream) flatActionOf(typ []byte) *flatAction {
	for i := range s.flat {
		if s.flat[i].typ == string(typ) {
			s.flatLast = i
			return &s.flat[i]
		}
	}
	o := s.schema.eventObj[string(typ)]
	if o == nil || o.name != string(typ) {
		return nil
	}
	a := flatAction{typ: o.name}
	key := ""
	switch o.name {
	case "RUN_STARTED", "RUN_ERROR", "RUN_FINISHED", "STEP_STARTED", "STEP_FINISHED":
		return nil
	case "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
		a.open, key = &s.texts, "messageId"
	case "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END":
		a.open, key = &s.tools, "toolCallId"
	}
	a.head = `{"type":"` + o.name + `"`
	if a.open != nil {
		a.head += `,"` + key + `":"`
		switch {
		case strings.HasSuffix(o.name, "_START"):
			a.kind = pairStart
		case strings.HasSuffix(o.name, "_END"):
			a.kind = pairEnd
		default:
			a.kind = pairContinue
		}
	}
	s.flat = append(s.flat, a)
	s.flatLast = len(s.flat) - 1
	return &s.flat[s.flatLast]
}

// NextFlat is Next for the bulk of a stream, for a caller that also needs
// the event's type, without reading the event twice. It takes an event
// laid out as AG-UI encoders write most: an object whose first member is
// "type" and whose others are strings, {"type":"<T>","<key>":"<value>",…},
// no whitespace, no key with an escape or named "type" again (so T is the
// type every consumer reads), T not one of the run's or a step's, the
// stream inside a run, and, where T starts, continues or ends a message or
// a tool call, the id (the second member, unescaped) where the sequence
// rules accept it. Then it counts it as Next does, with no fault, and
// returns its type, as PeekType returns it. Otherwise it returns nil and
// the stream is unchanged: the caller takes NextOfType. ev is borrowed
// until it returns, the type with it.
func (s *Stream) NextFlat(ev []byte) []byte {
	const lead = `{"type":"`
	if s.runs == 0 || s.errored || s.ended {
		return nil
	}
	// Most events are of the type before: its head, compared whole.
	var a *flatAction
	if s.flatLast >= 0 && bytes.HasPrefix(ev, []byte(s.flat[s.flatLast].head)) {
		a = &s.flat[s.flatLast]
	} else {
		if len(ev) < len(lead)+2 || string(ev[:len(lead)]) != lead {
			return nil
		}
		q := plainEnd(ev[len(lead):])
		if q <= 0 {
			return nil
		}
		if a = s.flatActionOf(ev[len(lead) : len(lead)+q]); a == nil || !bytes.HasPrefix(ev, []byte(a.head)) {
			return nil
		}
	}
	rest := ev[len(a.head):]
	var id []byte
	last := false // id is open.last
	if a.kind != 0 {
		// The id: most often the one last started.
		if l := a.open.last; l != "" && a.open.lastPlain && len(rest) > len(l) && string(rest[:len(l)]) == l && rest[len(l)] == '"' {
			id, last = rest[:len(l)], true
		} else if v := plainEnd(rest); v >= 0 {
			id = rest[:v]
		} else {
			return nil
		}
		rest = rest[len(id)+1:]
	}
	// The other members: ,"<key>":"<value>", up to the end.
	for len(rest) != 1 || rest[0] != '}' {
		const delta = `,"delta":"`
		if len(rest) > len(delta) && string(rest[:len(delta)]) == delta {
			rest = rest[len(delta):]
		} else {
			if len(rest) < 7 || rest[0] != ',' || rest[1] != '"' {
				return nil
			}
			k := plainEnd(rest[2:])
			if k < 0 || string(rest[2:2+k]) == "type" {
				return nil
			}
			if rest = rest[2+k:]; len(rest) < 4 || rest[1] != ':' || rest[2] != '"' {
				return nil
			}
			rest = rest[3:]
		}
		v := quotedEnd(rest)
		if v < 0 {
			return nil
		}
		rest = rest[v+1:]
	}
	if len(id) > 0 && !s.flatPair(a, unsafe.String(unsafe.SliceData(id), len(id)), last) {
		return nil
	}
	s.n++
	return ev[len(lead) : len(lead)+len(a.typ) : len(lead)+len(a.typ)]
}

// flatPair applies pair's rule to the id of an event NextFlat takes (last:
// it is the open set's last), reporting false, with the set unchanged,
// where pair would find a fault.
func (s *Stream) flatPair(a *flatAction, id string, last bool) bool {
	open := last || a.open.has(id)
	switch a.kind {
	case pairStart:
		if open {
			return false
		}
		a.open.add(id)
	case pairContinue:
		return open
	case pairEnd:
		if !open {
			return false
		}
		a.open.del(id)
	}
	return true
}

// plainEnd returns the index of the first quote in b when no backslash
// comes before it, else -1: the end of a short string (a type, a key, an
// id) without an escape.
func plainEnd(b []byte) int {
	for i, c := range b {
		switch c {
		case '"':
			return i
		case '\\':
			return -1
		}
	}
	return -1
}

// quotedEnd returns the index in b, the text of a JSON string after its
// opening quote, of its closing quote (one no backslash escapes, as
// stringEnd reads it), or -1.
func quotedEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		j += i
		n := 0
		for k := j - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
		i = j + 1
	}
}

// Reset readies s for another stream, keeping what it allocated.
func (s *Stream) Reset() {
	s.n, s.runs = 0, 0
	s.active, s.errored, s.ended = false, false, false
	clear(s.steps)
	s.texts.clear()
	s.tools.clear()
}

// NewStream starts checking a stream for a consumer of v.
func NewStream(v negotiate.Version) *Stream {
	s := &Stream{v: v, schema: schemaFor(v), steps: map[string]bool{}, flatLast: -1}
	return s
}

var (
	v0_0_37 = negotiate.Version{Patch: 37}
	v0_0_59 = negotiate.Version{Patch: 59}
)

// Next checks the next event, of the type its consumer reads (PeekType).
// Events of types the consumer does not read never reach its verifier and
// are skipped (they are counted, for Index).
func (s *Stream) Next(ev []byte) []StreamFault { return s.NextOfType(ev, PeekType(ev)) }

// NextOfType is Next for a caller that has peeked the event's type: typ is
// PeekType(ev). Both are borrowed until it returns.
func (s *Stream) NextOfType(ev, typ []byte) []StreamFault {
	i := s.n
	s.n++
	if typ == nil {
		return nil
	}
	doc := unsafe.String(unsafe.SliceData(ev), len(ev))
	t := unsafe.String(unsafe.SliceData(typ), len(typ))
	if strings.IndexByte(t, '\\') >= 0 {
		t = text(`"`+t+`"`, true)
	}
	return s.next(i, doc, t)
}

func (s *Stream) next(i int, doc, typ string) []StreamFault {
	if typ != s.lastType {
		o := s.schema.eventObj[typ]
		if o == nil {
			return nil
		}
		if o.name == typ {
			s.lastType = o.name
		}
	}
	var out []StreamFault
	fault := func(rule, detail, hint string) {
		out = append(out, StreamFault{Index: i, Rule: rule, Detail: detail, Hint: hint})
	}
	first := s.runs == 0 && !s.errored
	switch typ {
	case "RUN_STARTED":
		switch {
		case s.active:
			fault("run-started-twice", "RUN_STARTED while a run is active", "the producer likely starts a run for each turn or node without finishing the previous one")
		case s.errored && s.v.Less(v0_0_59):
			fault("after-run-error", "RUN_STARTED after RUN_ERROR: consumers before 0.0.59 accept nothing after it", "")
		case s.runs > 0 && s.v.Less(v0_0_37):
			fault("one-run-per-stream", "a second run on the stream: consumers before 0.0.37 accept one", "")
		}
		s.runs++
		s.active, s.errored, s.ended = true, false, false
		clear(s.steps)
		s.texts.clear()
		s.tools.clear()
		return out
	case "RUN_ERROR":
		if s.errored {
			fault("after-run-error", "RUN_ERROR after RUN_ERROR", "")
		}
		s.active, s.errored = false, true
		return out
	}
	switch {
	case first:
		fault("first-event", typ+" before RUN_STARTED", "the producer likely emits events before announcing the run, or omits RUN_STARTED")
	case s.errored:
		fault("after-run-error", typ+" after RUN_ERROR", "the producer likely keeps streaming after reporting an error")
	case s.ended:
		fault("after-run-finished", typ+" after RUN_FINISHED", "the producer likely emits trailing events (usage, cleanup) after finishing the run")
	}
	id := func(key string) string {
		if v, ok := secondMember(doc, typ, key); ok {
			return v
		}
		r := memberOf(doc, key)
		if len(r) < 2 || r[0] != '"' {
			return ""
		}
		return text(r, true)
	}
	switch typ {
	case "STEP_STARTED", "STEP_FINISHED":
		name := id("stepName")
		if name == "" {
			break
		}
		key := id("subagentRunId") + "\x00" + name
		if typ == "STEP_STARTED" {
			if s.steps[key] {
				fault("step-started-twice", "step "+quote(name)+" started again while open", "the producer likely re-enters a graph node (a loop or a retry) without finishing its previous pass")
			}
			s.steps[key] = true
		} else {
			if !s.steps[key] {
				fault("step-not-started", "step "+quote(name)+" finished but never started", "the producer likely finishes a step (graph node) whose start it did not emit, or names it differently at start and finish")
			}
			delete(s.steps, key)
		}
	case "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
		s.pair(&s.texts, id("messageId"), typ, "message", fault)
	case "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END":
		s.pair(&s.tools, id("toolCallId"), typ, "tool-call", fault)
	case "RUN_FINISHED":
		var open []string
		for k := range s.steps {
			open = append(open, "step "+quote(k[strings.IndexByte(k, 0)+1:]))
		}
		if s.v.AtLeast(v0_0_37) {
			s.texts.each(func(k string) { open = append(open, "message "+quote(k)) })
			s.tools.each(func(k string) { open = append(open, "tool call "+quote(k)) })
		}
		if len(open) > 0 {
			sort.Strings(open)
			fault("open-at-run-finished", "RUN_FINISHED with "+strings.Join(open, ", ")+" still open", "the producer likely skips the closing event when a step or message ends early")
		}
		s.active, s.ended = false, true
	}
	return out
}

// pair tracks START/continuation/END of messages and tool calls.
func (s *Stream) pair(open *openSet, id, typ, what string, fault func(rule, detail, hint string)) {
	if id == "" {
		return // the event's own judgement reports the missing id
	}
	switch {
	case strings.HasSuffix(typ, "_START"):
		if open.has(id) {
			fault(what+"-started-twice", what+" "+quote(id)+" started while open", "")
		}
		open.add(id)
	default:
		if !open.has(id) {
			fault(what+"-not-started", typ+" for "+what+" "+quote(id)+", which is not open", "")
		}
		if strings.HasSuffix(typ, "_END") {
			open.del(id)
		}
	}
}

// secondMember returns the string value of key when doc is laid out as
// AG-UI encoders write events, {"type":"<typ>","key":"…", with the value
// unescaped: key is then its first member of that name, as memberOf finds
// it, without a walk. ok is false for any other layout.
func secondMember(doc, typ, key string) (v string, ok bool) {
	const lead = `{"type":"`
	n := len(lead) + len(typ)
	if len(doc) < n+len(key)+6 || doc[:len(lead)] != lead || doc[len(lead):n] != typ {
		return "", false
	}
	rest := doc[n:]
	if rest[0] != '"' || rest[1] != ',' || rest[2] != '"' || rest[3:3+len(key)] != key || rest[3+len(key):6+len(key)] != `":"` {
		return "", false
	}
	rest = rest[6+len(key):]
	// Ids are short: one pass for the closing quote or an escape.
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '"':
			return rest[:i], true
		case '\\':
			return "", false
		}
	}
	return "", false
}

func quote(s string) string { return `"` + s + `"` }
