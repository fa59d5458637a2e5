package rules

import (
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agui-relay/agui-relay/negotiate"
)

// JudgeEvent judges one event (a JSON object, as sent on a data: line)
// against what a consumer of v reads. It walks the raw bytes and keeps
// nothing of ev: every string in the Judgement is its own. An accepted
// event costs no allocation.
func JudgeEvent(v negotiate.Version, ev []byte) Judgement {
	s := schemaFor(v)
	j := judge{s: s}
	doc, ok := j.document(ev, "event")
	if !ok {
		return j.out
	}
	t := memberOf(doc, "type")
	if len(t) < 3 || t[0] != '"' {
		// The frame check of every reader: no type, no event.
		j.add(Malformed, "/type", "type:string", "event.type", true)
		return j.out
	}
	typ := text(t, true)
	if o := s.eventObj[typ]; o != nil {
		j.object(o, doc)
		return j.out
	}
	if dupKey(doc, "type") {
		j.add(Malformed, "/type", "duplicate-key", "event.type", true)
		return j.out
	}
	if shape, ok := s.retiredEvents[typ]; ok {
		j.add(Retired, "", "retired", shape, false)
		return j.out
	}
	j.add(Unrecognised, "", "unknown-event-type", strings.Clone(typ), s.unknownEventFatal)
	return j.out
}

// JudgeInput judges one RunAgentInput against what a peer of v reads. A
// Malformed verdict is what the relay refuses with 400 before contacting
// the producer; the findings carry each pointer and rule.
//
// ReadInput and Input.Judge are the same judgement in two steps, for a
// caller that reads the input's members in between.
func JudgeInput(v negotiate.Version, in []byte) Judgement {
	doc, j := ReadInput(in)
	if j.Verdict == Malformed {
		return j
	}
	return doc.Judge(v)
}

// MalformedPart reports whether part, one item of a message's or a tool
// result's content array, is malformed for a reader of v: not JSON, not an
// object, no string type, or a part of a known type carrying a value its
// schema rejects (an image without its source, a text part whose text is
// not a string, a data source without mimeType...). A part of a type v does
// not describe, retired or unknown, is not malformed. With no content parts
// in v (before 0.0.41) only the basic kinds are checked. For the
// translations that reshape content: a downgrade must not repair a
// malformed part by dropping it.
func MalformedPart(v negotiate.Version, part []byte) bool {
	str := strings.TrimSpace(unsafe.String(unsafe.SliceData(part), len(part)))
	if str == "" || !Valid(str) {
		return true
	}
	if str[0] != '{' {
		return true
	}
	if d := memberOf(str, "type"); d == "" || d[0] != '"' {
		return true
	}
	s := schemaFor(v)
	if s.unions["ContentPart"] == nil {
		return false
	}
	j := judge{s: s}
	content := object{name: "content"}
	t := tUnion("ContentPart")
	j.value(&content, &field{name: "content", t: t}, &t, str, true)
	return j.out.Verdict == Malformed
}

// MalformedMember reports whether raw, one member of the union named union
// ("Message", "ContentPart", "Outcome"), is malformed for a reader of v: not
// JSON, not an object, no string discriminator (role, type), or a member of
// a known kind carrying a value its schema rejects (a reasoning message
// without content, an interrupt outcome without its reason...). A member of
// a kind v does not describe is not malformed, nor is anything of a union v
// does not have. For the translations that remove what a consumer does not
// know: removing a malformed member would repair it.
func MalformedMember(v negotiate.Version, union string, raw []byte) bool {
	s := schemaFor(v)
	u := s.unions[union]
	if u == nil {
		return false
	}
	str := strings.TrimSpace(unsafe.String(unsafe.SliceData(raw), len(raw)))
	if str == "" || !Valid(str) || str[0] != '{' {
		return true
	}
	if d := memberOf(str, u.disc); d == "" || d[0] != '"' {
		return true
	}
	j := judge{s: s}
	holder := object{name: union}
	t := tUnion(union)
	j.value(&holder, &field{name: union, t: t}, &t, str, true)
	return j.out.Verdict == Malformed
}

// KnownEventType reports whether a consumer of v parses events of type typ
// (legacy-profiles.md §3.1; 1.0: the 31 types, THINKING_* being retired).
func KnownEventType(v negotiate.Version, typ []byte) bool {
	return schemaFor(v).eventObj[string(typ)] != nil
}

// EventTypeAddedIn returns the release that added the event type typ to
// the shape tables, and false when no release the relay knows has it.
func EventTypeAddedIn(typ string) (negotiate.Version, bool) {
	for _, s := range history {
		if s.eventObj[typ] != nil {
			return s.version, true
		}
	}
	return negotiate.Version{}, false
}

// EventTypes lists the event types a consumer of v parses, sorted.
func EventTypes(v negotiate.Version) []string { return schemaFor(v).eventTypes() }

const maxDepth = 32

// seg is one step of the JSON pointer being walked: a key or an index.
type seg struct {
	key string // borrowed from the document; copied when a pointer is built
	idx int    // -1 for a key
}

// judge walks one document. It lives on the caller's stack: the path is
// a fixed array and findings are allocated only when there are some.
type judge struct {
	s     *schema
	out   Judgement
	echo  bool // inside RUN_STARTED.input
	depth int
	path  [maxDepth]seg
}

// document validates the JSON text and returns it, trimmed, when it is an
// object. The walk below relies on that validation.
func (j *judge) document(b []byte, what string) (string, bool) {
	doc, rule := readDocument(unsafe.String(unsafe.SliceData(b), len(b)), nil)
	if rule != "" {
		j.add(Malformed, "", rule, what, true)
		return "", false
	}
	return doc, true
}

func (j *judge) add(v Verdict, ptr, rule, shape string, fatal bool) {
	if v == Malformed {
		fatal = true
	}
	j.out.Findings = append(j.out.Findings, Finding{Verdict: v, Pointer: ptr, Rule: rule, Shape: shape, Fatal: fatal})
	if v > j.out.Verdict {
		j.out.Verdict = v
	}
}

func (j *judge) push(s seg) bool {
	if j.depth == maxDepth {
		return false
	}
	j.path[j.depth] = s
	j.depth++
	return true
}

func (j *judge) pop() { j.depth-- }

// pointer renders the first n segments of the path, plus key when set.
func (j *judge) pointer(n int, key string) string {
	var b strings.Builder
	for _, s := range j.path[:n] {
		b.WriteByte('/')
		if s.idx >= 0 {
			b.WriteString(strconv.Itoa(s.idx))
		} else {
			escapeToken(&b, s.key)
		}
	}
	if key != "" {
		b.WriteByte('/')
		escapeToken(&b, key)
	}
	return b.String()
}

func (j *judge) here() string { return j.pointer(j.depth, "") }

func escapeToken(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(s[i])
		}
	}
}

// The walk below judges a value that starts a string v running on past it
// (to the end of the enclosing document) and returns the value's length, so
// that a container is read once, by the walk of its members or items, and
// not again to find where it ends. A walk that stopped early (too deep)
// returns -1: the caller then finds the end itself (valueEnd).

// object judges a described object's members: unknown keys, duplicates,
// each known field, then the required ones. r starts with the object.
func (j *judge) object(o *object, r string) int {
	var seen uint64
	end := -1
	i := skipWS(r, 1)
	for {
		if i == len(r) || r[i] != '"' {
			end = i + 1 // the closing brace
			break
		}
		e := stringEnd(r, i)
		key := text(r[i+1:e-1], false)
		i = skipWS(r, skipWS(r, e)+1) // past the colon
		n := j.member(o, &seen, key, r[i:])
		if n < 0 {
			break
		}
		if i = skipWS(r, i+n); i < len(r) && r[i] == ',' {
			i = skipWS(r, i+1)
		}
	}
	for i := range o.fields {
		if o.fields[i].req && seen&(uint64(1)<<uint(i)) == 0 {
			if sh := o.fields[i].absent; sh != "" {
				j.add(Retired, j.pointer(j.depth, o.fields[i].name), "retired", sh, false)
				continue
			}
			j.add(Malformed, j.pointer(j.depth, o.fields[i].name), "required", o.name+"."+o.fields[i].name, true)
		}
	}
	if len(o.oneOf) > 0 {
		any := false
		for _, n := range o.oneOf {
			if seen&(uint64(1)<<uint(o.index(n))) != 0 {
				any = true
			}
		}
		if !any {
			j.add(Malformed, j.here(), "one-of:"+strings.Join(o.oneOf, "|"), o.name, true)
		}
	}
	return end
}

// member judges the member key of o whose value starts v, and returns the
// value's length, or -1 when the object's walk stops (too deep).
func (j *judge) member(o *object, seen *uint64, key, v string) int {
	i := o.index(key)
	if i < 0 {
		if !o.open {
			// 1.0 strips with a warning, 0.0.x strips silently or (0.0.43+,
			// top level) keeps; only strict objects fail the run.
			j.add(Unrecognised, j.pointer(j.depth, key), "unknown-property", o.name+"."+key, o.strict)
		}
		return valueEnd(v, 0)
	}
	bit := uint64(1) << uint(i)
	if *seen&bit != 0 {
		// Readers disagree on which of two equal keys counts.
		j.add(Malformed, j.pointer(j.depth, key), "duplicate-key", o.name+"."+key, true)
		return valueEnd(v, 0)
	}
	*seen |= bit
	if !j.push(seg{key: key, idx: -1}) {
		j.add(Malformed, j.here(), "too-deep", o.name, true)
		return -1
	}
	n := j.field(o, &o.fields[i], v)
	j.pop()
	if n < 0 {
		n = valueEnd(v, 0)
	}
	return n
}

// field judges the value of a known field and returns its length (-1: see
// object).
func (j *judge) field(o *object, f *field, v string) int {
	if v[0] == 'n' {
		switch f.null {
		case nullValue, nullAbsent:
			return len("null")
		case nullRetired:
			j.add(Retired, j.here(), "retired", f.retired, false)
			return len("null")
		case nullRetiredInEcho:
			if j.echo {
				j.add(Retired, j.here(), "retired", f.retired, false)
				return len("null")
			}
		}
		j.add(Malformed, j.here(), "null-not-allowed", o.name+"."+f.name, true)
		return len("null")
	}
	was := j.echo
	j.echo = was || f.echo
	n := j.value(o, f, &f.t, v, false)
	j.echo = was
	return n
}

// value judges the value that starts v against t and returns its length
// (-1: see object). o and f name the field for findings; item is set for
// array items (an unknown union member then names the item).
func (j *judge) value(o *object, f *field, t *typ, v string, item bool) int {
	switch t.kind {
	case kObject:
		if v[0] != '{' {
			j.bad(o, f, "type:object")
			return valueEnd(v, 0)
		}
		return j.object(j.s.obj(t.ref), v)
	case kArray:
		if v[0] != '[' {
			j.bad(o, f, "type:array")
			return valueEnd(v, 0)
		}
		n, end := j.items(o, f, t.elem, v)
		if n < t.minItems {
			j.bad(o, f, "min-items:"+strconv.Itoa(t.minItems))
		}
		return end
	case kContent:
		if v[0] != '[' {
			if v[0] != '"' {
				j.bad(o, f, "type:string|array")
			}
			return valueEnd(v, 0)
		}
		// An item of the wrong basic kind fails the whole union, located at
		// the content (as zod reports it).
		ok := true
		eachItem(v, func(e string) bool {
			ok = e[0] == '{'
			return ok
		})
		if !ok {
			j.bad(o, f, "type:string|array")
			return valueEnd(v, 0)
		}
		_, end := j.items(o, f, t.elem, v)
		return end
	case kUnion:
		if v[0] != '{' {
			j.bad(o, f, "type:object")
			return valueEnd(v, 0)
		}
		return j.union(o, f, j.s.unions[t.ref], v, item)
	}
	n := valueEnd(v, 0)
	j.scalar(o, f, t, v[:n])
	return n
}

// scalar judges v, the whole value, against t, a kind the walk does not
// descend into.
func (j *judge) scalar(o *object, f *field, t *typ, v string) {
	switch t.kind {
	case kAny:
		return
	case kString:
		if v[0] != '"' {
			j.bad(o, f, "type:string")
			return
		}
		if len(t.enum) > 0 && !member(t.enum, text(v, true)) {
			if f != nil && f.oldValue != "" && text(v, true) == f.oldValue {
				j.add(Retired, j.here(), "retired", f.oldShape, false)
			} else if len(t.enum) == 1 {
				j.bad(o, f, "literal:"+t.enum[0])
			} else {
				j.bad(o, f, "enum:"+strings.Join(t.enum, "|"))
			}
		}
		if t.nonEmpty && len(v) == 2 {
			j.bad(o, f, "non-empty")
		}
		if t.pointer && !validPointer(text(v, true)) {
			j.bad(o, f, "json-pointer")
		}
	case kNumber:
		if !isNumber(v) {
			j.bad(o, f, "type:number")
		}
	case kInt:
		if !isNumber(v) {
			j.bad(o, f, "type:integer")
			return
		}
		n, _ := strconv.ParseFloat(v, 64)
		switch {
		case math.IsInf(n, 0) || n != math.Trunc(n):
			j.bad(o, f, "type:integer")
		case t.safe && math.Abs(n) > 1<<53-1:
			j.bad(o, f, "safe-integer")
		case t.nonNeg && n < 0:
			j.bad(o, f, "minimum:0")
		}
	case kBool:
		if v[0] != 't' && v[0] != 'f' {
			j.bad(o, f, "type:boolean")
		}
	case kRecord:
		if v[0] != '{' {
			j.bad(o, f, "type:object")
		}
	}
}

// items judges every item of the array that starts v, and returns how many
// there are and the array's length (-1: see object).
func (j *judge) items(o *object, f *field, elem *typ, v string) (n, end int) {
	i := skipWS(v, 1)
	for i < len(v) && v[i] != ']' {
		if !j.push(seg{idx: n}) {
			j.add(Malformed, j.here(), "too-deep", o.name, true)
			return n, -1
		}
		n++
		l := j.value(o, f, elem, v[i:], true)
		j.pop()
		if l < 0 {
			l = valueEnd(v, i) - i
		}
		if i = skipWS(v, i+l); i < len(v) && v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return n, i + 1
}

func isNumber(v string) bool { return v[0] == '-' || (v[0] >= '0' && v[0] <= '9') }

// union judges the member of u that starts v and returns its length (-1:
// see object).
func (j *judge) union(o *object, f *field, u *union, v string, item bool) int {
	d := memberOf(v, u.disc)
	if d == "" || d[0] != '"' {
		j.add(Malformed, j.pointer(j.depth, u.disc), "discriminator", u.name+"."+u.disc, true)
		return valueEnd(v, 0)
	}
	dv := text(d, true)
	if m := u.objs[dv]; m != nil {
		return j.object(m, v)
	}
	if rm, ok := u.retired[dv]; ok && rm.matches(v) {
		j.add(Retired, j.here(), "retired", rm.shape, false)
		return valueEnd(v, 0)
	}
	// An unknown member: an item or an optional slot loses itself, a
	// required slot loses the object that holds it (protocol-1.0.md §2.13).
	ptr := j.here()
	if !item && f.req && j.depth > 0 {
		ptr = j.pointer(j.depth-1, "")
	}
	j.add(Unrecognised, ptr, u.rule, u.name+"("+dv+")", j.s.unknownMemberFatal)
	return valueEnd(v, 0)
}

func (rm *retiredMember) matches(v string) bool {
	for _, k := range rm.req {
		if m := memberOf(v, k); m == "" || m[0] != '"' {
			return false
		}
	}
	for _, k := range rm.oneOf {
		if m := memberOf(v, k); m != "" && m[0] == '"' {
			return true
		}
	}
	return len(rm.oneOf) == 0
}

// bad records a malformed value at the current pointer.
func (j *judge) bad(o *object, f *field, rule string) {
	j.add(Malformed, j.here(), rule, o.name+"."+f.name, true)
}

func member(set []string, s string) bool {
	for _, m := range set {
		if m == s {
			return true
		}
	}
	return false
}

// validPointer checks RFC 6901 syntax: ^(/([^/~]|~[01])*)*$.
func validPointer(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

// dupKey reports whether the object has key more than once.
func dupKey(doc string, key string) bool {
	n := 0
	eachMember(doc, func(k, _ string) bool {
		if text(k, false) == key {
			n++
		}
		return n < 2
	})
	return n > 1
}
