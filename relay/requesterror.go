package relay

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// A request the server cannot parse is responded to and logged by the kind
// of its fault alone: fasthttp's parse errors quote the whole header block,
// Authorization and Cookie included.

// requestErrorKinds maps fasthttp's parse errors to the kind the relay
// reports, first match first.
var requestErrorKinds = [...]faultWords{
	{"invalid request uri", "invalid byte in the request target"},
	{"invalid uri", "invalid byte in the request target"},
	{"requesturi cannot be empty", "empty request target"},
	{"request uri cannot be empty", "empty request target"},
	{"missing colon", "header line without a colon"},
	{"invalid header key", "invalid header name"},
	{"invalid header value", "invalid header value"},
	{"duplicate content-length", "more than one Content-Length"},
	{"content-length and transfer-encoding", "both Content-Length and Transfer-Encoding"},
	{"transfer-encoding", kindTransferCoding},
	{"content-length", "invalid Content-Length"},
	// fasthttp's "missing required host header" and "too many host
	// headers": each before the other's words can match it.
	{"missing required host", "no Host header"},
	{"too many host", "more than one Host header"},
	{"invalid host", "invalid Host header"},
	{"request method", "invalid request method"},
	{"http version", "unsupported HTTP version"},
	{"whitespace", "malformed request line"},
	{"trailer", "invalid trailer"},
	{"chunk", "malformed chunked body"},
	{"unexpected eof", "the request ended early"},
	{"eof", "the request ended early"},
}

func requestErrorKind(err error) string {
	var small *fasthttp.ErrSmallBuffer
	var op *net.OpError
	switch {
	case errors.Is(err, errBareLF):
		return "a line ending in a bare LF (want CRLF)"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "body too large"
	case errors.As(err, &small):
		return "request line or headers too large"
	case isTimeout(err):
		return "timeout"
	case errors.As(err, &op):
		// The connection's own failure: addresses and the system's words.
		return op.Error()
	}
	return faultKind(err, requestErrorKinds[:], "malformed request")
}

type faultWords struct{ has, kind string }

// faultKind returns the kind of the first of kinds whose words err's text
// says, else otherwise. Only the text before the first quoted bytes is
// searched: what a peer sent must not choose the kind.
func faultKind(err error, kinds []faultWords, otherwise string) string {
	msg := err.Error()
	if i := strings.IndexAny(msg, "\"\\"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "buffer size="); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.ToLower(msg)
	for _, k := range kinds {
		if strings.Contains(msg, k.has) {
			return k.kind
		}
	}
	return otherwise
}

// zapPrintf adapts a zap logger to fasthttp's Logger, logging an error as
// its kind (requestErrorKind).
type zapPrintf struct{ l *zap.Logger }

func (z zapPrintf) Printf(format string, args ...any) {
	clean := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			a = requestErrorKind(err)
		}
		clean[i] = a
	}
	z.l.Warn(fmt.Sprintf(format, clean...), zap.String("component", "fasthttp"))
}
