package translate

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// This file holds the byte-editing helpers the steps share. A step never
// re-encodes an event: it locates what it changes with gjson (Result.Index
// is the byte offset of a value in the event), records replacements of byte
// ranges in an Edits, and applies them in one pass that copies every other
// byte as it was. Values that move (a text, an id) are copied as raw JSON,
// never decoded and re-encoded.

// Edits collects replacements of byte ranges of one source document. The
// ranges must not overlap; Apply reports when they do. The zero value is
// ready to use; Reset makes it reusable without allocating.
type Edits struct {
	ops   []editOp
	arena []byte // replacement bytes, addressed by offset so growth is safe
	marks []bool // scratch of DeleteItems
}

type editOp struct {
	start, end int // replaced range of the source
	from, to   int // replacement in arena
}

// Reset forgets every recorded edit, keeping the memory.
func (e *Edits) Reset() {
	e.ops = e.ops[:0]
	e.arena = e.arena[:0]
}

// Len reports how many edits are recorded.
func (e *Edits) Len() int { return len(e.ops) }

// ReplaceString records that src[start:end] becomes raw (copied now).
func (e *Edits) ReplaceString(start, end int, raw string) {
	from := len(e.arena)
	e.arena = append(e.arena, raw...)
	e.ops = append(e.ops, editOp{start, end, from, len(e.arena)})
}

// Delete records that src[start:end] goes.
func (e *Edits) Delete(start, end int) {
	e.ops = append(e.ops, editOp{start, end, len(e.arena), len(e.arena)})
}

// Begin starts building a replacement with the Append methods, returning a
// mark for Commit.
func (e *Edits) Begin() int { return len(e.arena) }

// Append adds bytes to the replacement being built.
func (e *Edits) Append(b []byte) { e.arena = append(e.arena, b...) }

// AppendString adds a string's bytes to the replacement being built.
func (e *Edits) AppendString(s string) { e.arena = append(e.arena, s...) }

// AppendJSONString adds s encoded as a JSON string to the replacement being
// built.
func (e *Edits) AppendJSONString(s string) { e.arena = AppendJSONString(e.arena, s) }

// Commit records that src[start:end] becomes what was appended since mark.
func (e *Edits) Commit(start, end, mark int) {
	e.ops = append(e.ops, editOp{start, end, mark, len(e.arena)})
}

// sorted orders the edits by offset and reports whether they are disjoint.
func (e *Edits) sorted() bool {
	// Insertion sort: a step records a handful of edits, mostly in order.
	// Stable, so insertions at one offset keep the order they were made in.
	for i := 1; i < len(e.ops); i++ {
		for j := i; j > 0 && e.ops[j].start < e.ops[j-1].start; j-- {
			e.ops[j], e.ops[j-1] = e.ops[j-1], e.ops[j]
		}
	}
	for i := 1; i < len(e.ops); i++ {
		if e.ops[i].start < e.ops[i-1].end {
			return false
		}
	}
	return true
}

// Apply writes src with the edits applied to dst[:0] and returns it. ok is
// false (and dst holds src unchanged) when edits overlap or fall outside
// src: a step bug, which must not corrupt the stream.
func (e *Edits) Apply(src, dst []byte) (out []byte, ok bool) {
	dst = dst[:0]
	if !e.sorted() || (len(e.ops) > 0 && (e.ops[0].start < 0 || e.ops[len(e.ops)-1].end > len(src))) {
		return append(dst, src...), false
	}
	at := 0
	for _, op := range e.ops {
		if op.end < op.start {
			return append(dst[:0], src...), false
		}
		dst = append(dst, src[at:op.start]...)
		dst = append(dst, e.arena[op.from:op.to]...)
		at = op.end
	}
	return append(dst, src[at:]...), true
}

// Item is one member of an object or one element of an array, located in the
// document it was read from: Start is where the member's key (or the
// element) begins, End where its value ends.
type Item struct {
	Key   gjson.Result // zero for array elements
	Value gjson.Result
	Start int
	End   int
}

// view reads a byte slice as a string without copying; the string is valid
// only as long as the slice is not modified.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// rawBytes is r's raw JSON as bytes, without copying: read-only, valid as
// long as the document r was read from.
func rawBytes(r gjson.Result) []byte { return unsafe.Slice(unsafe.StringData(r.Raw), len(r.Raw)) }

// malformedPart reports whether the content part p is malformed for a 1.0
// reader (rules.MalformedPart): a step that drops or reshapes parts leaves
// such a part for the consumer to refuse, since removing it would repair it.
func malformedPart(p gjson.Result) bool { return rules.MalformedPart(negotiate.Current, rawBytes(p)) }

// Root returns the event's top-level value with Index set to where it starts
// in ev, and Raw without trailing whitespace, so that offsets of its members
// are offsets in ev.
func Root(ev []byte) gjson.Result {
	i := 0
	for i < len(ev) && ev[i] <= ' ' {
		i++
	}
	j := len(ev)
	for j > i && ev[j-1] <= ' ' {
		j--
	}
	r := gjson.Parse(view(ev[i:j]))
	r.Index = i
	return r
}

// Items appends the members (or elements) of container to dst. container
// must have been read from the document the offsets are for (Get, Root or
// Items of it), so that its Index is the document offset.
func Items(container gjson.Result, dst []Item) []Item {
	if !container.IsObject() && !container.IsArray() {
		return dst
	}
	container.ForEach(func(k, v gjson.Result) bool {
		it := Item{Key: k, Value: v, Start: v.Index, End: v.Index + len(v.Raw)}
		if k.Type == gjson.String {
			it.Start = k.Index
		} else {
			it.Key = gjson.Result{}
		}
		dst = append(dst, it)
		return true
	})
	return dst
}

// DeleteItems records the removal of the items for which drop is true, with
// the commas and whitespace that separated them, so that what is left is
// valid JSON laid out as it was. items must be every item of one container,
// in order (as Items returns them). drop is called once per item, in order,
// so it may warn. It reports how many items go.
func (e *Edits) DeleteItems(items []Item, drop func(i int) bool) int {
	e.marks = e.marks[:0]
	removed := 0
	for i := range items {
		d := drop(i)
		e.marks = append(e.marks, d)
		if d {
			removed++
		}
	}
	e.deleteMarked(len(items), func(i int) (int, int) { return items[i].Start, items[i].End })
	return removed
}

// deleteMembers is DeleteItems for an event's top-level members (ev's,
// topMembers): those named name go, and each is counted (translated).
func (e *Edits) deleteMembers(ev []byte, ms []member, name string, translated func(shape string)) {
	e.marks = e.marks[:0]
	for i := range ms {
		d := ms[i].is(ev, name)
		e.marks = append(e.marks, d)
		if d {
			translated(name)
		}
	}
	e.deleteMarked(len(ms), func(i int) (int, int) { return ms[i].start(), ms[i].end })
}

// deleteMarked records the removal of the n items of one container whose
// e.marks are set; span(i) is where item i starts and ends.
func (e *Edits) deleteMarked(n int, span func(i int) (start, end int)) {
	// The trailing run of dropped items goes with the comma before it; every
	// other dropped item goes with the comma after it.
	tail := n
	for tail > 0 && e.marks[tail-1] {
		tail--
	}
	if tail < n {
		_, last := span(n - 1)
		if tail == 0 {
			first, _ := span(0)
			e.Delete(first, last)
			return
		}
		_, end := span(tail - 1)
		e.Delete(end, last)
	}
	for i := 0; i < tail; i++ {
		if e.marks[i] {
			start, _ := span(i)
			next, _ := span(i + 1)
			e.Delete(start, next)
		}
	}
}

// AppendMember records the addition of "key":raw as the last member of obj.
// nonEmpty says whether obj keeps at least one member after the other edits
// (a comma is needed). key must not need escaping.
func (e *Edits) AppendMember(obj gjson.Result, nonEmpty bool, key string, raw []byte) {
	at := obj.Index + len(obj.Raw) - 1 // the closing brace
	mark := e.Begin()
	if nonEmpty {
		e.AppendString(",")
	}
	e.AppendString(`"`)
	e.AppendString(key)
	e.AppendString(`":`)
	e.Append(raw)
	e.Commit(at, at, mark)
}

// SetValueString records that the value r (read from the edited document)
// becomes the raw JSON text raw.
func (e *Edits) SetValueString(r gjson.Result, raw string) {
	e.ReplaceString(r.Index, r.Index+len(r.Raw), raw)
}

// StringBody returns the bytes between the quotes of a raw JSON string, still
// escaped: concatenating the bodies of several strings inside one pair of
// quotes gives the JSON string of their concatenation, without decoding.
func StringBody(r gjson.Result) string {
	if r.Type != gjson.String || len(r.Raw) < 2 {
		return ""
	}
	return r.Raw[1 : len(r.Raw)-1]
}

// AppendJSONString appends s as a JSON string, byte for byte as
// JSON.stringify writes it (what the peers' own encoders write): only what
// JSON requires is escaped (quote, backslash, control characters), the
// controls that have one with their two-character escape (\b \f \n \r \t)
// and the others as \u00xx; everything else, <, > and & included, is
// written as it is. Invalid UTF-8 becomes U+FFFD (JSON.stringify cannot
// meet it: a JavaScript string is UTF-16). The same input always gives the
// same bytes. The relay's own events and every step's replacements are
// encoded with it.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// EachElement calls fn for every element of an array read from the edited
// document, with its index; offsets in the Results are document offsets.
func EachElement(arr gjson.Result, fn func(i int, v gjson.Result)) {
	if !arr.IsArray() {
		return
	}
	i := 0
	arr.ForEach(func(_, v gjson.Result) bool {
		fn(i, v)
		i++
		return true
	})
}

// Sub reads path inside v (a value read from the edited document), keeping
// document offsets (gjson's Result.Get adds v.Index itself). A value gjson
// could not locate is reported absent rather than edited at the wrong bytes.
func Sub(v gjson.Result, path string) gjson.Result {
	r := v.Get(path)
	if r.Exists() && r.Index <= v.Index {
		return gjson.Result{} // a member is never at its container's offset
	}
	return r
}

// rewriter is the scratch an event step keeps for its run: the edits of the
// event at hand, the buffer the rewrite is written to, items to iterate and
// verdicts on them.
type rewriter struct {
	ed    Edits
	buf   []byte
	items []Item
	drops []bool
}

// emit passes ev on: as it was when no edit was recorded, else rewritten.
// The rewrite lives in w.buf until the step's next event.
func (w *rewriter) emit(ev []byte, emit func([]byte)) {
	if w.ed.Len() == 0 {
		emit(ev)
		return
	}
	out, _ := w.ed.Apply(ev, w.buf)
	w.buf = out
	w.ed.Reset()
	emit(out)
}

// messagesOf returns the messages array an event carries, with document
// offsets: MESSAGES_SNAPSHOT.messages and RUN_STARTED.input.messages. shape
// names it for warnings.
func messagesOf(ev []byte, typ string) (msgs gjson.Result, shape string) {
	switch typ {
	case "MESSAGES_SNAPSHOT":
		return Get(ev, "messages"), "MESSAGES_SNAPSHOT.messages"
	case "RUN_STARTED":
		return Get(ev, "input.messages"), "RUN_STARTED.input.messages"
	}
	return gjson.Result{}, ""
}

// flattenParts records in ed the replacement of a content-parts array
// (document offsets) by the JSON string of the concatenation of its text
// parts' texts, in order, copied as escaped string bodies (never decoded).
// It appends to lost the partShape name of every part it drops. It records
// nothing and returns ok false when a part is malformed for a 1.0 reader
// (rules.MalformedPart: not an object, no string type, a text part whose
// text is not a string, a media part without a well-formed source...):
// dropping such a part, or flattening its text, would repair it, and a
// translation does not repair. Parts of unknown or retired types are not
// malformed; they are dropped and named.
func flattenParts(ed *Edits, content gjson.Result, lost []string) (_ []string, ok bool) {
	if !content.IsArray() {
		return lost, false
	}
	ok = true
	content.ForEach(func(_, p gjson.Result) bool {
		ok = !malformedPart(p)
		return ok
	})
	if !ok {
		return lost, false
	}
	mark := ed.Begin()
	ed.AppendString(`"`)
	content.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("type").Str; t != "text" {
			lost = append(lost, partShape(t))
		} else {
			ed.AppendString(StringBody(p.Get("text")))
		}
		return true
	})
	ed.AppendString(`"`)
	ed.Commit(content.Index, content.Index+len(content.Raw), mark)
	return lost, true
}
