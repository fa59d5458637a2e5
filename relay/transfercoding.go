package relay

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// The only transfer coding the relay reads in a request is chunked, alone
// (RFC 9112 §6.1). fasthttp refuses every other coding but "identity",
// which it accepts and forgets: the body was then framed by a
// Content-Length or taken as empty, and whatever followed on the
// connection read as the next request, a request smuggled behind the first
// (issue #31). refuseTransferCoding answers such a request as the server
// answers the codings it refuses itself, and closes the connection: once a
// request's framing is in doubt, nothing after it is a request.

// refuseTransferCoding answers 400 and closes the connection when the
// request names a Transfer-Encoding other than chunked; it reports whether
// it did.
func refuseTransferCoding(ctx *fasthttp.RequestCtx) bool {
	if !otherTransferCoding(ctx.Request.Header.RawHeaders()) {
		return false
	}
	problemBadRequest(kindTransferCoding).Write(ctx)
	ctx.SetConnectionClose()
	return true
}

// kindTransferCoding is the kind of fault (requestErrorKind) of a request
// whose Transfer-Encoding the relay does not read.
const kindTransferCoding = "unsupported Transfer-Encoding"

// otherTransferCoding reports whether raw, a request's header lines as they
// came (fasthttp's RawHeaders, valid in the handler), has a
// Transfer-Encoding line whose value is not chunked. The server refused a
// second such line, a folded one is no header of its own (it continues the
// line before), and a name with a space before its colon was refused too.
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
