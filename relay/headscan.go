package relay

import (
	"bytes"
	"errors"
)

// A request head whose lines end in a bare LF would make fasthttp's server
// wait for a CRLF that never comes, until the client gave up: its parser
// looks for CRLFCRLF only. The relay's consumer connections (Listener)
// look at the head of a request as it is read instead, and fail the read
// once a line ends in LF alone, so that the server answers 400 at once.
// Only where a head is known to start: a connection's first request, and
// the request after a stream handed the connection back (handBack); past
// an ordinary answer a pipelined request may be read already, and its body
// (JSON with newlines) must never be taken for a head.

// errBareLF is what a consumer connection's read returns once the head of
// its request ended a line in LF without CR: that read's bytes are dropped,
// so that the server, which may accept a bare LF inside a complete head,
// never parses the head whole.
var errBareLF = errors.New("a request line ends in a bare LF")

// headScan follows a request head through a connection's reads.
type headScan struct {
	on      bool  // a head is being read
	last    byte  // the last byte scanned
	started bool  // a line other than an empty one was seen
	bad     bool  // a line ended in a bare LF
	line    int32 // bytes of the current line so far, its CR included (the server's read buffer bounds a head: 16 KiB)
}

// arm starts watching a head that begins with the next byte read.
func (h *headScan) arm() { *h = headScan{on: true} }

// scan follows p, the next bytes read, until the head's end (the empty
// line after its lines; empty lines before the request line are skipped,
// as RFC 9112 allows); it reports whether a line of the head ended in a
// bare LF.
func (h *headScan) scan(p []byte) bool {
	for h.on && len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			h.line += int32(len(p))
			h.last = p[len(p)-1]
			return false
		}
		prev := h.last
		if i > 0 {
			prev = p[i-1]
		}
		h.line += int32(i)
		switch {
		case h.line == 0 && !h.started:
			// An empty line before the request line, bare or not: skipped
			// (the server does too), and the first byte read (the server's
			// one-byte read) is never refused.
		case prev != '\r':
			h.on, h.bad = false, true
			return true
		}
		if h.line > 1 {
			h.started = true
		} else if h.started {
			h.on = false // the empty line: the head is over, the body is not looked at
		}
		h.line, h.last = 0, '\n'
		p = p[i+1:]
	}
	return false
}
