package relay

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/redact"
)

// A producer's response whose header cannot be parsed is a 502 typed
// upstream-malformed, whose detail names the fault's kind alone: fasthttp's
// parse errors quote up to 4 KiB of the response. The log gets a short
// escaped excerpt.

// excerptLen bounds a logged excerpt: the status line and a little more.
const excerptLen = 64

type malformedResponseError struct {
	kind    string // what is wrong, a fixed phrase (responseErrorKinds)
	excerpt string // the response's first bytes, quoted (redact.Excerpt)
}

func (e *malformedResponseError) Error() string {
	return "the producer's response cannot be parsed: " + e.kind + "; it begins " + e.excerpt
}

// responseErrorKinds maps fasthttp's errors reading a response header to the
// kind the relay reports, first match first.
var responseErrorKinds = [...]faultWords{
	{"status code", "invalid status code"},
	{"whitespace in the first line", "malformed status line"},
	{"duplicate content-length", "more than one Content-Length"},
	{"content-length and transfer-encoding", "both Content-Length and Transfer-Encoding"},
	{"transfer-encoding", "unsupported Transfer-Encoding"},
	{"content-length", "invalid Content-Length"},
	{"missing colon", "header line without a colon"},
	{"invalid header key", "invalid header name"},
	{"invalid header value", "invalid header value"},
	{"http version", "unsupported HTTP version"},
	{"protocol", "unsupported HTTP version"},
	{"small read buffer", "a header over the 4 KiB read buffer"},
	{"interim", "too many interim (1xx) responses"},
}

// malformedResponse returns err as a malformedResponseError when it says the
// response header from br cannot be parsed; else err as it is.
func malformedResponse(err error, br *bufio.Reader) error {
	var op *net.OpError
	var errno syscall.Errno
	if err == nil || err == errHeaderWaitGone || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, net.ErrClosed) || isTimeout(err) ||
		errors.As(err, &op) || errors.As(err, &errno) {
		return err
	}
	kind := faultKind(err, responseErrorKinds[:], "malformed header")
	var start []byte
	if br != nil {
		start, _ = br.Peek(min(br.Buffered(), excerptLen+1))
	}
	return &malformedResponseError{kind: kind, excerpt: redact.Excerpt(start, excerptLen)}
}

// ProblemMalformed is the problem type of a producer's response whose header
// cannot be parsed.
const ProblemMalformed = "urn:agui-relay:upstream-malformed"

func problemMalformed(e *malformedResponseError) *Problem {
	return &Problem{Type: ProblemMalformed, Title: "The producer's response is malformed", Status: fasthttp.StatusBadGateway,
		Detail: "the producer's response cannot be parsed: " + e.kind}
}
