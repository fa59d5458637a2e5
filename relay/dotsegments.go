package relay

import (
	"bytes"
	"encoding/hex"

	"github.com/valyala/fasthttp"
)

// hasDotSegment reports whether the path of a request target has a "." or
// ".." segment once percent-decoded, with "%2f", "%5c" and a backslash as
// separators and a segment's parameters ignored, since producers differ in
// what they decode. The relay forwards the path as it came, so such a
// segment could reach outside the upstream's base path or a route's prefix:
// it refuses it rather than guess the producer's resolution.
func hasDotSegment(target []byte) bool {
	path, _, _ := bytes.Cut(target, []byte("?"))
	if bytes.IndexByte(path, '.') < 0 && bytes.IndexByte(path, '%') < 0 {
		return false // the common path: nothing to decode, no dot
	}
	dots, other := 0, false // the segment so far: its dots, anything else
	for i := 0; i <= len(path); i++ {
		c := byte('/')
		if i < len(path) {
			c = path[i]
		}
		if c == '%' && i+2 < len(path) {
			if d, ok := percentByte(path[i+1], path[i+2]); ok {
				c = d
				i += 2
			}
		}
		switch c {
		case '/', '\\':
			if !other && (dots == 1 || dots == 2) {
				return true
			}
			dots, other = 0, false
		case '.':
			if !other {
				dots++
			}
		case ';':
			// "..;x": servlet containers drop a segment's parameters
			// before they resolve it.
			if !other && (dots == 1 || dots == 2) {
				return true
			}
			other = true
		default:
			other = true
		}
	}
	return false
}

func percentByte(hi, lo byte) (byte, bool) {
	var b [1]byte
	_, err := hex.Decode(b[:], []byte{hi, lo})
	return b[0], err == nil
}

func problemDotSegment() *Problem {
	return &Problem{Type: "urn:agui-relay:dot-segment", Title: "The request path has a dot segment", Status: fasthttp.StatusBadRequest,
		Detail: `the relay refuses "." and ".." path segments, plain or percent-encoded ("%2e"), rather than forward a path that could resolve outside the upstream's path or the route's prefix`}
}
