package rules

import (
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
	schema                 *schema // v's, looked up once
	lastType               string  // the last known type, the schema's own string: most events repeat it
	n                      int
	runs                   int
	active, errored, ended bool
	steps                  map[string]bool
	texts, tools           openSet
}

// openSet is the ids of the open messages or of the open tool calls. last,
// when not "", is one of them (the last started), compared before the map
// is looked at: continuation events mostly name the one just started.
type openSet struct {
	m    map[string]bool
	last string
}

func (o *openSet) has(id string) bool { return id == o.last && id != "" || o.m[id] }

func (o *openSet) add(id string) {
	k := strings.Clone(id) // id is borrowed from the event
	o.m[k], o.last = true, k
}

func (o *openSet) del(id string) {
	delete(o.m, id)
	if id == o.last {
		o.last = ""
	}
}

func (o *openSet) clear() {
	clear(o.m)
	o.last = ""
}

// NewStream starts checking a stream for a consumer of v.
func NewStream(v negotiate.Version) *Stream {
	return &Stream{v: v, schema: schemaFor(v), steps: map[string]bool{},
		texts: openSet{m: map[string]bool{}}, tools: openSet{m: map[string]bool{}}}
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
			for k := range s.texts.m {
				open = append(open, "message "+quote(k))
			}
			for k := range s.tools.m {
				open = append(open, "tool call "+quote(k))
			}
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
