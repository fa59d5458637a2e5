package relay

import (
	"bytes"
)

// The media types of an AG-UI run's response: the event stream the relay
// shapes, and the binary encoding it passes on untouched.
const (
	mediaEventStream = "text/event-stream"
	mediaProto       = "application/vnd.ag-ui.event+proto"
)

// acceptsEventStream reports whether a consumer whose Accept header is
// accept can read an event stream: no Accept, or one whose most specific
// range that matches text/event-stream has a quality above 0 (RFC 9110
// §12.5.1).
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

// qualityAbove0 reports false only for a q parameter of 0 (q=0.000): a
// range is acceptable unless it says otherwise.
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

func isProto(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte(mediaProto))
}
