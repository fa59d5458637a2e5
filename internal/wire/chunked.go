package wire

import (
	"bytes"
	"errors"
	"io"
)

// Framing removes the HTTP/1.1 framing of a producer's response from the
// bytes read off the connection, in place: chunk size lines, the CRLF after
// each chunk and the trailer go, the data stays. Reading the connection
// straight into the Scanner's buffer and decoding there saves the copy
// through a second buffer and lets one read take everything the producer
// has sent, however it was chunked.
//
// It knows the three ways a response ends: chunked (a zero-size chunk, then
// trailer lines up to an empty one), a Content-Length, or the connection's
// close. It follows RFC 9112's chunk grammar: chunk extensions (after
// optional whitespace, "1f ;ext") are ignored, whitespace after the size
// without one ("1f ") is refused, and size lines and chunk ends must end
// in CRLF (a bare LF is how request smuggling between proxies starts).
type Framing struct {
	left  int64 // data bytes still to come in this chunk, or of the Content-Length
	size  int64
	line  int // bytes of the size or trailer line read so far
	extra int // bytes that followed the end of the body
	rest  int // of them, how many ended the last Decode's p, untouched
	mode  framingMode
	state chunkState
	sized bool // a hex digit of the size line has been read
	ows   bool // spaces after the digits
	ext   bool // in an extension (after ';')
	cr    bool // the size line's CR has been read
	done  bool // the body is complete
	// overrun: data followed the end of a Content-Length body (not only
	// blank lines, which broken servers leave): the length lied, and the
	// response is broken, not complete.
	overrun bool
}

type framingMode uint8

const (
	framingChunked framingMode = iota
	framingLength
	framingClose
)

type chunkState uint8

const (
	chunkSize    chunkState = iota // in a chunk size line
	chunkData                      // in a chunk's data
	chunkDataEnd                   // the CRLF after a chunk's data
	chunkTrailer                   // trailer lines after the last chunk
)

// maxChunkLine bounds a chunk size line (digits, extensions): a producer
// that sends an endless one is broken, not slow. Trailer lines are not
// bounded (see Decode).
const maxChunkLine = 4 << 10

// ErrBadChunk is a chunked encoding that breaks RFC 9112's grammar.
var ErrBadChunk = errors.New("malformed chunked encoding in the producer's response")

// ErrOverrun ends a response whose producer sent more than its
// Content-Length: the last event may be cut anywhere.
var ErrOverrun = errors.New("the producer sent more bytes than its Content-Length")

// NewFraming returns the framing of a response with the given
// Content-Length as fasthttp reports it: -1 chunked, -2 until the
// connection closes, else that many bytes.
func NewFraming(contentLength int) Framing {
	switch {
	case contentLength == -1:
		return Framing{mode: framingChunked}
	case contentLength < 0:
		return Framing{mode: framingClose}
	}
	return Framing{mode: framingLength, left: int64(contentLength), done: contentLength == 0}
}

// Decode removes the framing from p, the bytes just read, and returns how
// many data bytes are now at the front of p. Bytes after the end of the
// body are dropped and noted (Extra), and left as they were at the end of
// p (Rest).
func (f *Framing) Decode(p []byte) (int, error) {
	f.rest = 0
	switch f.mode {
	case framingClose:
		return len(p), nil
	case framingLength:
		if f.done {
			f.extra += len(p)
			f.rest = len(p)
			return 0, nil
		}
		n := len(p)
		if int64(n) >= f.left {
			f.extra += n - int(f.left)
			f.rest = n - int(f.left)
			f.overrun = f.extra > 0 && len(bytes.Trim(p[f.left:], "\r\n")) > 0
			n = int(f.left)
			f.done = true
		}
		f.left -= int64(n)
		return n, nil
	}
	w := 0
	for i := 0; i < len(p); {
		if f.done {
			f.extra += len(p) - i
			f.rest = len(p) - i
			return w, nil
		}
		switch f.state {
		case chunkData:
			k := len(p) - i
			if int64(k) > f.left {
				k = int(f.left)
			}
			w += copy(p[w:], p[i:i+k])
			i += k
			if f.left -= int64(k); f.left == 0 {
				f.state, f.line = chunkDataEnd, 0
			}
		case chunkDataEnd:
			c := p[i]
			i++
			switch {
			case c == '\r' && f.line == 0:
				f.line = 1
			case c == '\n' && f.line == 1:
				f.state, f.line = chunkSize, 0
			default:
				return w, ErrBadChunk
			}
		case chunkSize:
			c := p[i]
			i++
			if f.line++; f.line > maxChunkLine {
				return w, ErrBadChunk
			}
			switch {
			case f.cr:
				if c != '\n' {
					return w, ErrBadChunk
				}
				if f.size == 0 {
					f.state, f.line = chunkTrailer, 0
				} else {
					f.state, f.left = chunkData, f.size
				}
				f.size, f.sized, f.ows, f.ext, f.cr = 0, false, false, false, false
			case c == '\r' && f.sized:
				if f.ows && !f.ext {
					// "1f \r\n": RFC 9112 allows whitespace after the
					// size only before an extension's ';'.
					return w, ErrBadChunk
				}
				f.cr = true
			case c == '\n' || c == '\r':
				return w, ErrBadChunk // a bare LF, or no size: smuggling-prone
			case f.ext:
				// an extension: ignored, as fasthttp does
			case c == ' ' || c == '\t':
				if !f.sized {
					return w, ErrBadChunk
				}
				f.ows = true
			case c == ';':
				if !f.sized {
					return w, ErrBadChunk
				}
				f.ext = true // after optional whitespace (BWS), as RFC 9112 allows
			default:
				d, ok := hexDigit(c)
				if !ok || f.ows || f.size > (1<<62)>>4 {
					return w, ErrBadChunk
				}
				f.size, f.sized = f.size<<4|int64(d), true
			}
		case chunkTrailer:
			c := p[i]
			i++
			switch {
			case c == '\n':
				if f.line == 0 {
					f.done = true // the empty line: the body is complete
				}
				f.line = 0
			case c == '\r' && f.line == 0:
				// the CR of what may be the empty line
			default:
				// A trailer field, of any length: dropped, as nginx
				// drops a producer's trailers (proxy_pass_trailers off)
				// without bounding them. Nothing of it is stored, and the
				// response header has gone to the consumer already: a
				// limit here could only cut a complete body short.
				f.line = 1
			}
		}
	}
	return w, nil
}

// End reports the error for a connection that ended (io.EOF) now: none
// when the body is complete or ends with the connection, else a broken
// response.
func (f *Framing) End() error {
	if f.done || f.mode == framingClose {
		return io.EOF
	}
	return io.ErrUnexpectedEOF
}

// Done reports whether the body is complete.
func (f *Framing) Done() bool { return f.done }

// Extra returns how many bytes followed the end of the body.
func (f *Framing) Extra() int { return f.extra }

// Rest returns how many bytes at the end of the p of the last Decode came
// after the end of the body, left there unchanged: on a connection kept
// for another exchange, the start of the next message. The bytes before
// them were this body's.
func (f *Framing) Rest() int { return f.rest }

// Overrun reports whether data, not only blank lines, followed the end of
// a Content-Length body: the length lied.
func (f *Framing) Overrun() bool { return f.overrun }

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
