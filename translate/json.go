package translate

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/tidwall/gjson"
)

// PeekType returns the raw value of the event's top-level "type" string
// without allocating: the bytes between the quotes, borrowed from ev. It
// returns nil when there is no string "type" member. Escaped type strings
// are returned undecoded (no event type needs an escape).
func PeekType(ev []byte) []byte {
	// Every AG-UI encoder writes the type first: read it without a parse
	// when the event starts exactly so (no whitespace, no escape). Like
	// gjson, this takes the first "type" member of an event that repeats it.
	const lead = `{"type":"`
	if len(ev) > len(lead) && string(ev[:len(lead)]) == lead {
		rest := ev[len(lead):]
		if i := quoteOrEscape(rest); i > 0 && rest[i] == '"' {
			return rest[:i:i]
		}
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(ev), len(ev)), "type")
	if r.Type != gjson.String || r.Index <= 0 || len(r.Raw) < 2 {
		return nil
	}
	return ev[r.Index+1 : r.Index+len(r.Raw)-1]
}

// quoteOrEscape returns the index of the first '"' or '\\' in b, or -1. The
// relay peeks at every event's type at least once and a translated event's
// several times: a type is a few words long, and eight bytes at a time
// (SWAR) find its end in a few steps, where two IndexByte calls cost more
// to set up than to run.
func quoteOrEscape(b []byte) int {
	const quotes, escapes = lo8 * '"', lo8 * '\\'
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, e := x^quotes, x^escapes
		// The lowest byte flagged is the first zero byte of q or e.
		if z := (q-lo8)&^q&hi8 | (e-lo8)&^e&hi8; z != 0 {
			return i + bits.TrailingZeros64(z)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' {
			return i
		}
	}
	return -1
}

// Get reads path from ev without copying: the Result's Raw aliases ev, so it
// is valid only as long as ev is.
func Get(ev []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(ev), len(ev)), path)
}
