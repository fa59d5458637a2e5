package translate

import (
	"bytes"
	"unsafe"
)

// This file holds the one read of an event's top-level members that the
// steps of a chain share: the first step to ask about the event at hand
// (Run.members) walks it, and every later one, its Wants and its Apply,
// reads the offsets. A content delta that no step wants costs this walk
// and nothing more, however many steps look at it.

// member is one member of an event's top-level object, by its offsets in
// the event: the key between its quotes, escapes undecoded; the member's
// start (the key's opening quote); and its value's first byte and the byte
// after it. escaped says the key holds an escape, so that its raw bytes
// are not its name.
type member struct {
	key, keyEnd int
	val, end    int
	escaped     bool
}

func (m *member) start() int { return m.key - 1 }

// is reports whether the member's raw key is name (an escaped key is
// none: the caller decides what an escaped key may be).
func (m *member) is(ev []byte, name string) bool {
	return !m.escaped && string(ev[m.key:m.keyEnd]) == name
}

// topMembers appends to dst the members of ev's top-level object, in order,
// and reports whether ev reads as one: a brace, quoted keys, colons, values
// and commas where JSON has them, and nothing after the closing brace but
// whitespace. Values are delimited, not judged (strings by their closing
// quote, objects and arrays by their brackets' depth, numbers and literals
// by the next delimiter): the chain's gate judges the event (rules.
// ValidEvent). On a valid event it reads what gjson reads.
func topMembers(ev []byte, dst []member) ([]member, bool) {
	i := skipSpace(ev, 0)
	if i >= len(ev) || ev[i] != '{' {
		return dst, false
	}
	i = skipSpace(ev, i+1)
	if i < len(ev) && ev[i] == '}' {
		return dst, skipSpace(ev, i+1) == len(ev)
	}
	for {
		if i >= len(ev) || ev[i] != '"' {
			return dst, false
		}
		q, escaped := keyEnd(ev, i)
		if q < 0 {
			return dst, false
		}
		m := member{key: i + 1, keyEnd: q, escaped: escaped}
		i = skipSpace(ev, q+1)
		if i >= len(ev) || ev[i] != ':' {
			return dst, false
		}
		m.val = skipSpace(ev, i+1)
		if m.end = valueEnd(ev, m.val); m.end < 0 {
			return dst, false
		}
		dst = append(dst, m)
		if i = skipSpace(ev, m.end); i >= len(ev) {
			return dst, false
		}
		switch ev[i] {
		case ',':
			i = skipSpace(ev, i+1)
		case '}':
			return dst, skipSpace(ev, i+1) == len(ev)
		default:
			return dst, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote that closes the string whose
// opening quote is b[i], or -1 when it is not closed.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0 // the backslashes before the quote: an odd count escapes it
		for q-1-n > i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
	return -1
}

// keyEnd is stringEnd for a key, and whether it holds an escape: keys are
// short, read a byte at a time until the first quote or backslash.
func keyEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j, false
		case '\\':
			return stringEnd(b, i), true
		}
	}
	return -1, false
}

// valueEnd returns the index after the value that starts at b[i], or -1
// when none is delimited there.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		if q := stringEnd(b, i); q >= 0 {
			return q + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = stringEnd(b, j); j < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' && b[j] > ' ' {
		j++
	}
	return j
}

// members returns the top-level members of ev, the event the chain is
// handing on (topMembers), read once for every step that asks about it:
// the chain counts each event it hands on (hop), and a read is reused for
// the same bytes in the same hop. The offsets are ev's.
func (r *Run) members(ev []byte) ([]member, bool) {
	if id := r.handing(ev); r.top.id != id {
		if r.top.list == nil {
			// Room for an event's usual members at once, where growing
			// from none took three allocations a run.
			r.top.list = make([]member, 0, 8)
		}
		r.top.list, r.top.ok = topMembers(ev, r.top.list[:0])
		r.top.id = id
	}
	return r.top.list, r.top.ok
}

// handed identifies an event in the hop the chain hands it on: its first
// byte's address, its length, the hop. What a step reads of the event in
// its Wants holds for its Apply while the identity is the same.
type handed struct {
	at  uintptr
	n   int
	hop uint64
}

// handing returns the identity of ev, the event the chain is handing on.
func (r *Run) handing(ev []byte) handed {
	return handed{uintptr(unsafe.Pointer(unsafe.SliceData(ev))), len(ev), r.hop}
}

// topRead is the last read of members, with the event it was read from.
type topRead struct {
	list []member
	ok   bool
	id   handed
}
