package rules

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// MaxNesting is the deepest nesting of objects and arrays a document may
// have (encoding/json's limit). gjson validates recursively, one stack frame
// per level: a 16 MiB document of "[" exhausts the goroutine stack, a fatal
// error that no recover catches and that would end the whole relay.
const MaxNesting = 10000

// Valid reports whether doc is JSON text nested at most MaxNesting deep.
// Every untrusted document goes through it before anything parses it.
//
// Its answers are exactly those of NestingWithin(doc, MaxNesting) &&
// gjson.Valid(doc) (a differential fuzz test, FuzzValidMatchesGJSON, holds it
// to that), in one flat pass with no recursion and no allocation:
//
//   - the grammar is RFC 8259's: any value at the top, whitespace being
//     space, tab, LF and CR only; numbers without leading zeros or a bare
//     sign, dot or exponent;
//   - inside strings, every byte from 0x20 up other than '"' and '\\' stands
//     for itself: like gjson, Valid does not check UTF-8 (invalid sequences
//     and lone surrogate escapes such as "\ud800" are accepted; the reader
//     that decodes the string deals with them);
//   - an escape is one of \" \\ \/ \b \f \n \r \t or \u and four hex digits.
//
// String contents are scanned eight bytes at a time.
func Valid(doc string) bool {
	// The first 64 levels' kinds fit in one word. A document nested deeper
	// is validated again with room for MaxNesting levels, in a function of
	// its own so that the common case does not clear that room.
	var stack [1]uint64
	ok, deeper := valid(doc, stack[:], nil)
	if deeper {
		return validDeep(doc, nil)
	}
	return ok
}

// ValidEvent is Valid for a document a step may shape, and reports too
// whether its top-level object names a key twice (escapes decoded, as a
// JSON reader compares keys). Readers disagree on which of the two counts
// (JSON.parse takes the last, gjson the first), so such a document must not
// be shaped by either: it is malformed, and its reader decides. The keys are
// compared in the same pass, without allocating (but for escaped keys).
func ValidEvent(doc string) (ok, repeats bool) {
	var stack [1]uint64
	var keys topKeys
	ok, deeper := valid(doc, stack[:], &keys)
	if deeper {
		ok = validDeep(doc, nil)
	}
	if !ok {
		return false, false
	}
	if deeper || keys.n > len(keys.seen) {
		// Rare: nested past 64 levels (the pass stopped there), or more
		// keys than are kept.
		return true, dupMember(doc)
	}
	return true, keys.repeated
}

// topKeys are the keys of a document's top-level object, as valid meets them
// (escapes decoded), each with the offset in the document just past its
// colon, where its value begins after optional blanks. Past the first
// repeat, or past len(seen) keys, it records no more: n and repeated say
// so.
type topKeys struct {
	seen     [16]string
	at       [16]int
	n        int
	repeated bool
}

func (k *topKeys) add(key string, at int) {
	if k.repeated {
		return
	}
	key = text(key, false)
	for _, s := range k.seen[:min(k.n, len(k.seen))] {
		if s == key {
			k.repeated = true
			return
		}
	}
	if k.n < len(k.seen) {
		k.seen[k.n], k.at[k.n] = key, at
	}
	k.n++
}

// validDeep is valid with room for MaxNesting levels; keys as for valid.
//
//go:noinline
func validDeep(doc string, keys *topKeys) bool {
	var stack [(MaxNesting + 63) / 64]uint64
	ok, _ := valid(doc, stack[:], keys)
	return ok
}

// NestingWithin reports whether no object or array of doc lies more than
// max levels deep, in one flat pass that skips strings. It does not
// validate; a document no longer than max bytes always passes.
func NestingWithin(doc string, max int) bool {
	if len(doc) <= max {
		return true
	}
	depth := 0
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// valid validates doc, keeping the kind of each open container (a set bit:
// an object) in stack. deeper reports that the document nests deeper than
// stack holds (and no deeper than MaxNesting) before any error was found:
// the answer is then unknown.
//
// keys, when not nil, is given the top-level object's keys and where their
// values begin.
func valid(doc string, stack []uint64, keys *topKeys) (ok, deeper bool) {
	n := len(doc)
	i := 0
	depth := 0
	start, end := 0, 0 // of the key being read
	limit := min(MaxNesting, 64*len(stack))

value: // a value starts at i, after optional whitespace
	for i < n && isWS(doc[i]) {
		i++
	}
	if i == n {
		return false, false
	}
	switch c := doc[i]; c {
	case '"':
		if i = validString(doc, i+1); i < 0 {
			return false, false
		}
		goto after
	case '{':
		if depth == limit {
			return false, depth < MaxNesting
		}
		stack[depth>>6] |= 1 << (depth & 63)
		depth++
		for i++; i < n && isWS(doc[i]); i++ {
		}
		if i < n && doc[i] == '}' {
			i++
			depth--
			goto after
		}
		goto key
	case '[':
		if depth == limit {
			return false, depth < MaxNesting
		}
		stack[depth>>6] &^= 1 << (depth & 63)
		depth++
		for i++; i < n && isWS(doc[i]); i++ {
		}
		if i < n && doc[i] == ']' {
			i++
			depth--
			goto after
		}
		goto value
	case 't':
		if i+4 > n || doc[i+1] != 'r' || doc[i+2] != 'u' || doc[i+3] != 'e' {
			return false, false
		}
		i += 4
		goto after
	case 'f':
		if i+5 > n || doc[i+1] != 'a' || doc[i+2] != 'l' || doc[i+3] != 's' || doc[i+4] != 'e' {
			return false, false
		}
		i += 5
		goto after
	case 'n':
		if i+4 > n || doc[i+1] != 'u' || doc[i+2] != 'l' || doc[i+3] != 'l' {
			return false, false
		}
		i += 4
		goto after
	default:
		if i = validNumber(doc, i); i < 0 {
			return false, false
		}
		goto after
	}

key: // a member's key starts at i, after optional whitespace
	for i < n && isWS(doc[i]) {
		i++
	}
	if i == n || doc[i] != '"' {
		return false, false
	}
	start = i
	if i = validString(doc, i+1); i < 0 {
		return false, false
	}
	end = i
	for i < n && isWS(doc[i]) {
		i++
	}
	if i == n || doc[i] != ':' {
		return false, false
	}
	i++
	if keys != nil && depth == 1 {
		keys.add(doc[start+1:end-1], i)
	}
	goto value

after: // a value ended just before i
	for i < n && isWS(doc[i]) {
		i++
	}
	if depth == 0 {
		return i == n, false
	}
	if i == n {
		return false, false
	}
	if stack[(depth-1)>>6]&(1<<((depth-1)&63)) != 0 {
		switch doc[i] {
		case ',':
			i++
			goto key
		case '}':
			i++
			depth--
			goto after
		}
		return false, false
	}
	switch doc[i] {
	case ',':
		i++
		goto value
	case ']':
		i++
		depth--
		goto after
	}
	return false, false
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// validString validates the contents of a string that begins at i (just
// after its opening quote) and returns the index after its closing quote,
// or -1. Eight bytes at a time, it looks for the first byte that is a
// quote, a backslash or a control byte (< 0x20): specialBytes.
func validString(doc string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(doc))
	n := len(doc)
	for {
		for i+8 <= n {
			if m := specialBytes(load64(p, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for ; i < n; i++ {
			if c := doc[i]; c == '"' || c == '\\' || c < ' ' {
				goto special
			}
		}
		return -1
	special:
		switch doc[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 == n {
				return -1
			}
			switch doc[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n || !isHex(doc[i+2]) || !isHex(doc[i+3]) || !isHex(doc[i+4]) || !isHex(doc[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
}

// load64 reads the eight bytes at p+i, the first in the low bits.
func load64(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, i)), 8))
}

// specialBytes flags (with its high bit) the lowest byte of w that is a
// quote, a backslash or a control byte, and maybe bytes above it; it is
// zero when w has none. For each byte x of w, x^0x02 is below 0x21 exactly
// when x is a control byte or a quote, and x^0x5c is zero exactly when x is
// a backslash; the usual subtract-and-mask tests ((y-k)&^y&0x80 per byte:
// y below k) flag the lowest such byte exactly, since a borrow of the
// subtractions only starts at a flagged byte and spills into those above.
func specialBytes(w uint64) uint64 {
	c := w ^ (0x02 * lsb)
	s := w ^ ('\\' * lsb)
	return ((c-0x21*lsb)&^c | (s-lsb)&^s) & msb
}

func isHex(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 6
}

// validNumber validates a number that begins at i and returns the index
// after it, or -1.
func validNumber(doc string, i int) int {
	n := len(doc)
	if doc[i] == '-' {
		i++
		if i == n {
			return -1
		}
	}
	switch c := doc[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		for i++; i < n && doc[i]-'0' < 10; i++ {
		}
	default:
		return -1
	}
	if i < n && doc[i] == '.' {
		i++
		if i == n || doc[i]-'0' >= 10 {
			return -1
		}
		for i++; i < n && doc[i]-'0' < 10; i++ {
		}
	}
	if i < n && doc[i]|0x20 == 'e' {
		i++
		if i < n && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		if i == n || doc[i]-'0' >= 10 {
			return -1
		}
		for i++; i < n && doc[i]-'0' < 10; i++ {
		}
	}
	return i
}
