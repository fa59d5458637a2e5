package relay

import (
	"bytes"
	"errors"
)

// A request header whose lines end in a bare LF would make fasthttp's
// server wait for a CRLFCRLF that never comes. The Listener's connections
// scan the header as it is read and fail the read at a bare LF, so that the
// server responds 400 at once. Only where a header is known to start (a
// connection's first request, after handBack): elsewhere a pipelined
// request's body (JSON with newlines) may be read already.

// errBareLF drops the read's bytes, so that the server, which may accept a
// bare LF inside a complete header, never parses the header whole.
var errBareLF = errors.New("a request line ends in a bare LF")

// headerScan follows a request header through a connection's reads.
type headerScan struct {
	on      bool // a header is being read
	last    byte
	started bool  // a non-empty line was seen
	bad     bool  // a line ended in a bare LF
	line    int32 // bytes of the current line, CR included (at most the 16 KiB read buffer)
}

func (h *headerScan) arm() { *h = headerScan{on: true} }

// scan follows p, the next bytes read, to the header's end, skipping
// empty lines before the request line as RFC 9112 allows; it reports
// whether a line ended in a bare LF.
func (h *headerScan) scan(p []byte) bool {
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
			// Skipped, as the server does; the server's one-byte first
			// read is never refused.
		case prev != '\r':
			h.on, h.bad = false, true
			return true
		}
		if h.line > 1 {
			h.started = true
		} else if h.started {
			h.on = false // the header is over; the body is not scanned
		}
		h.line, h.last = 0, '\n'
		p = p[i+1:]
	}
	return false
}
