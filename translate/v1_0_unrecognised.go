package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// unrecognisedMaterial removes, for consumers older than 1.0, material they
// do not know and on which they fail the whole run: events of a type the
// consumer does not parse, and, in MESSAGES_SNAPSHOT, RUN_STARTED.input and
// RUN_FINISHED, messages of an unknown role, content parts of an unknown
// type or with an unknown source, and outcomes of an unknown type (what
// rules.JudgeEvent reports as unrecognised and fatal for the consumer).
//
// Lossy, with a warning per shape. 1.0 made the reader tolerant: a 1.0
// consumer drops or strips exactly this material with a warning of its own,
// so it gets it untouched, and an older one gets the same result instead of
// a failed run. An outcome of an unknown type is removed, so the run reads as
// a success, as a 1.0 consumer reads it. An event with a malformed value is
// passed on whole, and a message, part or outcome of a kind the consumer
// does not know but that 1.0 finds malformed (a reasoning message without
// content, a document without its source) stays where it is: the consumer
// fails on it either way, and a downgrade does not repair.
//
// It is a Late step: it judges the stream the version steps left (after
// REASONING_* became THINKING_*, SUBAGENT_* were dropped, …) against the
// consumer's version.
var unrecognisedMaterial = &Step{
	Name:        "unrecognised-material",
	Description: "event types, message roles, content parts and outcome types a legacy consumer would fail the run on are removed",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Late:        true,
	Types:       nil, // an unknown event type can be anything
	Concerns:    judgesType,
	NewEvent:    func() EventStep { return &unrecognisedRun{} },
}

// judgesType: the events whose unions the step judges, and those of a type
// the consumer does not know (Wants asks again, of a type no chain lists).
func judgesType(target negotiate.Version, typ string) bool {
	switch typ {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED":
		return true
	}
	return !rules.KnownEventType(target, []byte(typ))
}

const tolerantUpgrade = "@ag-ui/client 1.0 (drops unrecognised material with a warning instead of failing the run)"

type unrecognisedRun struct {
	rewriter
	drops []string // pointers of the material to remove

	// The verdict of KnownEventType on the last type Wants asked about:
	// events come in runs of one type (a message's deltas), and every
	// event of the run is asked about. knownTyp is a copy (the event's type
	// is borrowed) in knownBuf, which holds every type the protocol names.
	knownTo  negotiate.Version
	knownTyp []byte
	known    bool
	knownBuf [40]byte
}

// Wants: event types the consumer does not know, and the events whose
// unions (roles, parts, outcomes) it judges.
func (u *unrecognisedRun) Wants(r *Run, typ, _ []byte) bool {
	switch string(typ) {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED":
		return true
	}
	if typ == nil {
		return false
	}
	if u.knownTyp == nil || u.knownTo != r.To || string(u.knownTyp) != string(typ) {
		u.knownTo, u.knownTyp, u.known = r.To, append(u.knownBuf[:0], typ...), rules.KnownEventType(r.To, typ)
	}
	return !u.known
}

func (u *unrecognisedRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := r.EventType()
	switch string(typ) {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED": // known to every release
	default:
		// Wants let no other type through but one the consumer does not know.
		if rules.KnownEventType(negotiate.Current, typ) {
			t := string(typ)
			r.Lost(t, "@ag-ui/client "+r.To.String()+" does not know "+t+" and fails the whole run on it", tolerantUpgrade)
		} else {
			r.Lost("unrecognised event type", "an event type no AG-UI version describes (first seen: "+string(typ)+
				"); @ag-ui/client "+r.To.String()+" fails the whole run on it", tolerantUpgrade)
		}
		return
	}
	j := rules.JudgeEvent(r.To, ev)
	if j.Verdict != rules.Unrecognised {
		emit(ev) // accepted, or malformed (passed on whole)
		return
	}
	u.drops = u.drops[:0]
	for _, f := range j.Findings {
		if f.Verdict != rules.Unrecognised || !f.Fatal {
			continue
		}
		union := droppedUnion(f.Rule)
		if union == "" {
			continue
		}
		// What 1.0 describes but finds malformed (a document part without
		// its source, a reasoning message without content) is the
		// consumer's to refuse: removing it would repair it.
		if m := Get(ev, pointerPath(f.Pointer)); rules.MalformedMember(negotiate.Current, union, rawBytes(m)) {
			continue
		}
		u.drops = append(u.drops, f.Pointer)
		r.Lost(unrecognisedShape(string(typ), f.Rule), "@ag-ui/client "+r.To.String()+" fails the whole run on "+
			strings.TrimPrefix(f.Rule, "unknown-")+" values it does not know: the "+dropWhat(f.Rule)+" was removed", tolerantUpgrade)
	}
	u.remove(ev)
	u.emit(ev, emit)
}

// droppedUnion names the union whose member a finding of rule removes
// (the finding's pointer is that member), "" for a rule not removed.
func droppedUnion(rule string) string {
	switch rule {
	case "unknown-role":
		return "Message"
	case "unknown-part-type", "unknown-source-type":
		return "ContentPart"
	case "unknown-outcome-type":
		return "Outcome"
	}
	return ""
}

func dropWhat(rule string) string {
	switch rule {
	case "unknown-role":
		return "message"
	case "unknown-outcome-type":
		return "outcome"
	}
	return "content part"
}

// unrecognisedShape names what was removed with a fixed vocabulary (never
// the producer's value, which would make the set of shapes unbounded).
func unrecognisedShape(typ, rule string) string {
	base := typ
	switch typ {
	case "MESSAGES_SNAPSHOT":
		base = "MESSAGES_SNAPSHOT.messages"
	case "RUN_STARTED":
		base = "RUN_STARTED.input.messages"
	}
	switch rule {
	case "unknown-role":
		return base + " (unknown role)"
	case "unknown-part-type":
		return base + ".content (unknown part type)"
	case "unknown-source-type":
		return base + ".content (unknown source type)"
	}
	return base + ".outcome (unknown type)"
}

// remove records the removal of the items at u.drops, grouped by container.
// A pointer inside another removed item is skipped; a content array that
// loses every part becomes "".
func (u *unrecognisedRun) remove(ev []byte) {
	for i, p := range u.drops {
		if p == "" || nestedIn(p, u.drops) {
			continue
		}
		cut := strings.LastIndexByte(p, '/')
		parent := p[:cut]
		if seen(parent, u.drops[:i]) {
			continue // this container was handled with an earlier pointer
		}
		var keys []string
		for _, q := range u.drops {
			if c := strings.LastIndexByte(q, '/'); c >= 0 && q[:c] == parent && !nestedIn(q, u.drops) {
				keys = append(keys, unescapeToken(q[c+1:]))
			}
		}
		var container gjson.Result
		if parent == "" {
			container = Root(ev)
		} else {
			container = Get(ev, pointerPath(parent))
		}
		u.items = Items(container, u.items[:0])
		if len(u.items) == 0 {
			continue
		}
		drop := func(i int) bool {
			key := u.items[i].Key.Str
			if !u.items[i].Key.Exists() {
				key = strconv.Itoa(i)
			}
			for _, k := range keys {
				if k == key {
					return true
				}
			}
			return false
		}
		all := true
		for i := range u.items {
			all = all && drop(i)
		}
		if all && container.IsArray() && strings.HasSuffix(parent, "/content") {
			u.ed.SetValueString(container, `""`) // the empty value the older schema requires
			continue
		}
		u.ed.DeleteItems(u.items, drop)
	}
}

func seen(parent string, earlier []string) bool {
	for _, q := range earlier {
		if c := strings.LastIndexByte(q, '/'); c >= 0 && q[:c] == parent {
			return true
		}
	}
	return false
}

// nestedIn reports whether pointer p lies inside another pointer of ps.
func nestedIn(p string, ps []string) bool {
	for _, q := range ps {
		if q != p && strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

// pointerPath turns a JSON pointer into the gjson path of the same value.
func pointerPath(p string) string {
	var b strings.Builder
	for i, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(gjson.Escape(unescapeToken(tok)))
	}
	return b.String()
}

func unescapeToken(t string) string {
	if !strings.Contains(t, "~") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}
