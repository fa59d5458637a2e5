package translate

import (
	"bytes"
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
		if i := bytes.IndexByte(rest, '"'); i > 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return rest[:i:i]
		}
	}
	r := gjson.Get(unsafe.String(unsafe.SliceData(ev), len(ev)), "type")
	if r.Type != gjson.String || r.Index <= 0 || len(r.Raw) < 2 {
		return nil
	}
	return ev[r.Index+1 : r.Index+len(r.Raw)-1]
}

// Get reads path from ev without copying: the Result's Raw aliases ev, so it
// is valid only as long as ev is.
func Get(ev []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(ev), len(ev)), path)
}
