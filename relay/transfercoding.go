package relay

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// refuseTransferCoding responds 400 and closes the connection when the
// request names a Transfer-Encoding other than chunked (RFC 9112 §6.1),
// and reports whether it did. fasthttp accepts and forgets "identity",
// reading what follows as the next request: a request smuggled behind the
// first (issue #31).
func refuseTransferCoding(ctx *fasthttp.RequestCtx) bool {
	if !otherTransferCoding(ctx.Request.Header.RawHeaders()) {
		return false
	}
	problemBadRequest(kindTransferCoding).Write(ctx)
	ctx.SetConnectionClose()
	return true
}

const kindTransferCoding = "unsupported Transfer-Encoding"

// otherTransferCoding reports whether raw (fasthttp's RawHeaders, valid in
// the handler) has a Transfer-Encoding line whose value is not chunked. The
// server refused a second such line and a space before the colon; a folded
// line continues the one before.
func otherTransferCoding(raw []byte) bool {
	const name = "transfer-encoding:"
	for len(raw) > len(name) {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) > len(name) && line[0]|0x20 == 't' && bytes.EqualFold(line[:len(name)], []byte(name)) &&
			!bytes.EqualFold(bytes.TrimSpace(line[len(name):]), []byte("chunked")) {
			return true
		}
	}
	return false
}
