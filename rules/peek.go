package rules

import (
	"bytes"
	"unsafe"
)

// PeekType returns an event's type as its consumer reads it, without
// decoding the event: the raw text between the quotes of the last
// top-level "type" member (JSON.parse keeps the last of a repeated key, so
// {"type":"TEXT_MESSAGE_START","type":"RUN_FINISHED"} is a RUN_FINISHED to
// every JavaScript consumer), borrowed from ev. It returns nil when that
// member is not a string, or there is none. Escaped type strings are
// returned undecoded (no event type needs an escape). It does not validate
// ev: an event that is not JSON may still have a type.
func PeekType(ev []byte) []byte {
	// Every AG-UI encoder writes the type first: read it without a walk
	// when the event starts exactly so (no whitespace, no escape), and no
	// other top-level member can be a "type" after it.
	const lead = `{"type":"`
	if len(ev) > len(lead) && string(ev[:len(lead)]) == lead {
		rest := ev[len(lead):]
		if i := bytes.IndexByte(rest, '"'); i > 0 && !mayNameType(rest, i) {
			return rest[:i:i]
		}
	}
	start, end := lastType(unsafe.String(unsafe.SliceData(ev), len(ev)))
	if start < 0 {
		return nil
	}
	return ev[start:end:end]
}

// mayNameType reports whether rest, an event after its lead, whose type
// string ends at end, may be other than it looks: the type string holds an
// escape, or another member may be named "type" (the quoted word, or an
// escape that could spell one of its letters in a key, "typ\u0065").
// Either is rare outside such a key (a nested "type", a string that ends
// in an escaped quote and the word), and then the caller walks the event.
// It looks for the word at each 'y' and for an escape at each backslash,
// bytes that most events hold few of, so that the search is the
// vectorised IndexByte's: a search for the word itself would stop at
// every quote.
func mayNameType(rest []byte, end int) bool {
	for i := end + 1; ; {
		j := bytes.IndexByte(rest[i:], 'y')
		if j < 0 {
			break
		}
		j += i
		if j+4 <= len(rest) && string(rest[j-2:j+4]) == `"type"` {
			return true
		}
		i = j + 1
	}
	for i := 0; ; {
		j := bytes.IndexByte(rest[i:], '\\')
		switch {
		case j < 0:
			return false
		case i+j < end:
			return true // in the type string
		}
		j += i
		if j+1 < len(rest) && rest[j+1] == 'u' {
			// \u0060 to \u007f hold t, y, p and e; an escape cut short
			// is no JSON, and the walk decides.
			if j+4 >= len(rest) || string(rest[j+2:j+4]) == "00" && (rest[j+4] == '6' || rest[j+4] == '7') {
				return true
			}
		}
		i = min(j+2, len(rest)) // past the escaped byte: "\\u0065" is no escape of 'e'
	}
}

// lastType returns the bounds in doc of the text between the quotes of the
// last top-level "type" member's value (keys compared with their escapes
// decoded, as a JSON reader does); start is -1 when that value is not a
// string or there is no such member. It walks doc without validating it
// and stops where it stops being an object.
func lastType(doc string) (start, end int) {
	start, end = -1, -1
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return
	}
	for i = skipWS(doc, i+1); i < len(doc) && doc[i] == '"'; {
		ke := stringEnd(doc, i)
		if ke-1 <= i || doc[ke-1] != '"' {
			return // the key does not end
		}
		key := doc[i+1 : ke-1]
		if i = skipWS(doc, ke); i >= len(doc) || doc[i] != ':' {
			return
		}
		if i = skipWS(doc, i+1); i >= len(doc) {
			return
		}
		ve := valueEnd(doc, i)
		if key == "type" || (len(key) > len("type") && text(key, false) == "type") {
			start, end = -1, -1
			if doc[i] == '"' && ve-i >= 2 && doc[ve-1] == '"' {
				start, end = i+1, ve-1
			}
		}
		if i = skipWS(doc, ve); i >= len(doc) || doc[i] != ',' {
			return
		}
		i = skipWS(doc, i+1)
	}
	return
}
