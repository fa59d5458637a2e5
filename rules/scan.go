package rules

import (
	"math/bits"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// A minimal walker over JSON text that gjson.Valid has accepted. It hands
// out raw slices of the document and never decodes a value it is not asked
// to: gjson's ForEach unescapes every string value it meets, which costs an
// allocation per event on TOOL_CALL_ARGS (whose deltas are JSON fragments,
// full of escaped quotes).

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value starting at s[i].
func valueEnd(s string, i int) int {
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = stringEnd(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(s) {
			switch s[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// stringEnd returns the index just past the string starting at s[i] == '"'
// (len(s) when it does not end). It reads eight bytes at a time, as
// validString does: in valid JSON the only bytes specialBytes flags inside a
// string are its closing quote and the backslashes of its escapes.
func stringEnd(s string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(s))
	n := len(s)
	for i++; ; {
		for i+8 <= n {
			if m := specialBytes(load64(p, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for ; i < n && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= n {
			return n
		}
	special:
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2 // the escape and the byte it escapes
		default:
			i++ // a control byte: not in valid JSON
		}
	}
}

// eachMember calls fn with every member of the object obj: the key's raw
// text between its quotes and the value's raw text. Where obj stops being
// an object (an event not yet validated), so does it.
func eachMember(obj string, fn func(key, val string) bool) {
	i := skipWS(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		e := stringEnd(obj, i)
		if e-1 <= i || obj[e-1] != '"' {
			return // the key does not end
		}
		key := obj[i+1 : e-1]
		if i = skipWS(obj, e); i >= len(obj) || obj[i] != ':' {
			return
		}
		if i = skipWS(obj, i+1); i >= len(obj) {
			return
		}
		ve := valueEnd(obj, i)
		if !fn(key, obj[i:ve]) {
			return
		}
		i = skipWS(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
	}
}

// eachItem calls fn with the raw text of every item of the array arr.
func eachItem(arr string, fn func(val string) bool) {
	i := skipWS(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		ve := valueEnd(arr, i)
		if !fn(arr[i:ve]) {
			return
		}
		i = skipWS(arr, ve)
		if i < len(arr) && arr[i] == ',' {
			i = skipWS(arr, i+1)
		}
	}
}

// text returns the decoded content of a raw JSON string (or key text when
// quoted is false); it allocates only when there is an escape.
func text(raw string, quoted bool) string {
	if quoted {
		raw = raw[1 : len(raw)-1]
	}
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	return gjson.Parse(`"` + raw + `"`).Str
}

// member returns the raw value of the first member key of obj, or "".
func memberOf(obj, key string) string {
	out := ""
	eachMember(obj, func(k, v string) bool {
		if text(k, false) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

// dupMember reports whether the object doc (valid JSON) names a key twice
// at its top level, escapes decoded; false for any other value.
func dupMember(doc string) bool {
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	seen := map[string]bool{}
	dup := false
	eachMember(doc[i:], func(k, _ string) bool {
		k = text(k, false)
		dup = seen[k]
		seen[k] = true
		return !dup
	})
	return dup
}
