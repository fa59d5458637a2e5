package relay

import (
	"bytes"
)

// The media types of an AG-UI run's answer: the event stream the relay
// reads and shapes, and the binary encoding it passes on untouched.
const (
	mediaEventStream = "text/event-stream"
	mediaProto       = "application/vnd.ag-ui.event+proto"
)

// acceptsEventStream reports whether a consumer whose Accept header is
// accept can read an event stream: no Accept at all, or one whose most
// specific range that matches text/event-stream (text/event-stream itself,
// text/*, */*) has a quality above 0 (RFC 9110 §12.5.1). Media-type names
// are compared without regard to case, and parameters (charset=utf-8) do
// not change the match.
func acceptsEventStream(accept []byte) bool {
	if len(bytes.TrimSpace(accept)) == 0 {
		return true
	}
	best, ok := -1, false // specificity of the best matching range, and its verdict
	for rest := accept; len(rest) > 0; {
		var elem []byte
		elem, rest, _ = bytes.Cut(rest, []byte(","))
		mt, params, _ := bytes.Cut(elem, []byte(";"))
		mt = bytes.TrimSpace(mt)
		spec := -1
		switch {
		case bytes.EqualFold(mt, []byte(mediaEventStream)):
			spec = 2
		case bytes.EqualFold(mt, []byte("text/*")):
			spec = 1
		case bytes.Equal(mt, []byte("*/*")):
			spec = 0
		}
		if spec < best || spec < 0 {
			continue
		}
		q := qualityAbove0(params)
		if spec > best {
			best, ok = spec, q
		} else {
			ok = ok || q // the same range twice: either admits it
		}
	}
	return ok
}

// qualityAbove0 reads the q parameter of a media range's parameters
// ("charset=utf-8; q=0.5"): false only for a quality of 0 (q=0, q=0.0,
// q=0.000), true when there is none or it does not parse (a range is
// acceptable unless it says otherwise).
func qualityAbove0(params []byte) bool {
	for rest := params; len(rest) > 0; {
		var p []byte
		p, rest, _ = bytes.Cut(rest, []byte(";"))
		name, value, found := bytes.Cut(p, []byte("="))
		if !found || !bytes.EqualFold(bytes.TrimSpace(name), []byte("q")) {
			continue
		}
		value = bytes.TrimSpace(value)
		if len(value) == 0 || value[0] != '0' {
			return true
		}
		return len(bytes.Trim(value[1:], ".0")) > 0 || bytes.Count(value, []byte(".")) > 1
	}
	return true
}

// isProto reports whether a content type is the AG-UI protobuf encoding.
func isProto(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte(mediaProto))
}
