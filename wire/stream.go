package wire

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds a relayed stream's two ends on the wire: the producer's
// answer body as it is read (Body), and the consumer's answer as it is
// written (ChunkWriter).

// Body is a producer's HTTP/1.1 answer body, read off its connection
// straight into the caller's buffer, each read decoded in place (Framing).
// The bytes the HTTP client's reader took past the head are read first,
// then the connection.
//
// One goroutine reads; CloseWithError may come from any goroutine. A close
// while a read is in flight wakes the read (a read deadline in the past)
// and the reader gives the connection back when its read returns;
// otherwise the close gives it back at once: for reuse when the answer was
// read to its end, else to be closed.
//
// In polled mode (Poll) reads happen inside a RawConn callback and never
// block: a read that would returns ErrWouldBlock, and so does the read
// after one that came back short, since the socket was drained then,
// without asking the kernel (the runtime's poller, edge-triggered, will
// report new data). That saves the read per event that only finds nothing.
type Body struct {
	conn      net.Conn
	interrupt net.Conn // conn, or the one it wraps: set deadlines from any goroutine
	framing   Framing
	br        *bufio.Reader // the HTTP client's reader, while it holds unread bytes
	opts      BodyOptions

	raw     syscall.RawConn // the TCP connection, for polled reads; nil for TLS
	fd      int             // in polled mode, the descriptor; -1 otherwise
	drained bool            // the last polled read came back short

	state atomic.Int32 // bodyIdle, bodyReading, bodyInterrupted, bodyReleased
	err   error        // the end of the body: io.EOF or what broke it

	// onClose, when set, is called after a close from any goroutine: a
	// stream waiting without a goroutine must wake to end.
	onClose atomic.Pointer[func()]
}

// BodyOptions says where a Body's bytes are and what is done with its
// connection at the end.
type BodyOptions struct {
	// Interrupt is the connection whose read deadline wakes a read in
	// flight (the connection Read reads, or the one it wraps when that
	// one's deadlines belong to its reader); nil means the connection.
	Interrupt net.Conn
	// Raw, when set, is the TCP connection's RawConn: the body can then be
	// read by descriptor in polled mode (Poll).
	Raw syscall.RawConn
	// Buffered holds what the HTTP client read past the answer's head, nil
	// when nothing; it is handed to ReleaseReader once read or at the end.
	Buffered      *bufio.Reader
	ReleaseReader func(*bufio.Reader)
	// Release gives the connection back, once, at the end: for reuse when
	// reuse is true (the answer was read to a clean end on a connection
	// kept alive), else to be closed.
	Release func(reuse bool)
	// KeepAlive says the connection may serve another request after the
	// answer.
	KeepAlive bool
}

// ErrWouldBlock is a polled read's answer when nothing has arrived: the
// caller returns from the Poll step and is called again once there is.
var ErrWouldBlock = errors.New("wire: the read would block")

// ErrBodyClosed is a read of a Body that was closed (CloseWithError).
var ErrBodyClosed = errors.New("the producer's answer was closed")

const (
	bodyIdle int32 = iota
	bodyReading
	bodyInterrupted // closed during a read: the reader releases
	bodyReleased
)

// interruptNow is a read deadline long past: it wakes a blocked read.
var interruptNow = time.Unix(1, 0)

// NewBody returns the body of an answer read from conn, framed as
// contentLength says (NewFraming).
func NewBody(conn net.Conn, contentLength int, o BodyOptions) *Body {
	b := &Body{conn: conn, interrupt: o.Interrupt, framing: NewFraming(contentLength), br: o.Buffered, opts: o, raw: o.Raw, fd: -1}
	if b.interrupt == nil {
		b.interrupt = conn
	}
	if b.br != nil && b.br.Buffered() == 0 {
		b.dropReader()
	}
	return b
}

// Read reads data of the answer into p.
func (b *Body) Read(p []byte) (int, error) {
	if !b.begin() {
		return 0, ErrBodyClosed
	}
	n, err := b.read(p)
	if !b.end() && err != io.EOF {
		// Closed meanwhile: whatever the interrupted read returned (the
		// past deadline's timeout) was the closer's doing, not the
		// producer's. An end that came with the last bytes still stands.
		err = ErrBodyClosed
	}
	return n, err
}

func (b *Body) read(p []byte) (int, error) {
	if b.err == nil && b.framing.Done() {
		b.err = io.EOF // an empty answer (Content-Length: 0)
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		var n int
		var err error
		switch {
		case b.br != nil:
			n, _ = b.br.Read(p) // buffered bytes only: never reads the connection
			if b.br.Buffered() == 0 {
				b.dropReader()
			}
		case b.fd >= 0:
			if b.drained {
				b.drained = false
				return 0, ErrWouldBlock
			}
			n, err = ReadFD(b.fd, p)
			if err == syscall.EAGAIN {
				return 0, ErrWouldBlock
			}
			if n == 0 && err == nil {
				err = io.EOF // read(2)'s end of the stream
			}
			b.drained = n > 0 && n < len(p)
		default:
			n, err = b.conn.Read(p)
		}
		w, derr := b.framing.Decode(p[:n])
		switch {
		case derr != nil:
			b.err = derr
		case b.framing.Overrun():
			// Not the end: the cut-off event must not be completed.
			b.err = ErrOverrun
		case b.framing.Done():
			b.err = io.EOF
		case err == io.EOF:
			b.err = b.framing.End()
		case err != nil:
			b.err = err
		}
		if w > 0 && b.err == io.EOF {
			// The end came with the last bytes: said now, the caller
			// need not read again (nor flush first) to learn it.
			return w, io.EOF
		}
		if w > 0 {
			return w, nil
		}
		if b.err != nil {
			return 0, b.err
		}
		// Only framing arrived: read on.
	}
}

// Poll runs step inside the connection's RawConn read, each time the
// connection may have input: step reads the body (Read, which then never
// blocks but returns ErrWouldBlock) and returns false to wait until the
// connection is readable, true when it is done. Poll reports false when
// the body cannot be polled (no Raw, or closed); the caller then reads it
// the ordinary way. err is the runtime poller's: the read deadline passed,
// or the connection closed (ErrBodyClosed when the body was).
//
// The readiness the runtime's poller records lasts for one RawConn read:
// inside it, a read that came back short means the socket is drained, and
// the next read waits for the poller's edge without a system call. A new
// Poll forgets it, so its first read asks the kernel: data may be waiting
// without an edge to come.
func (b *Body) Poll(step func() bool) (polled bool, err error) {
	if b.raw == nil || !b.begin() {
		return false, nil
	}
	b.drained = false
	err = b.raw.Read(func(fd uintptr) bool {
		b.fd = int(fd)
		done := step()
		b.fd = -1
		return done
	})
	b.fd = -1
	if !b.end() {
		err = ErrBodyClosed // as Read: the interruption is not the producer's error
	}
	return true, err
}

// Polled reports whether the body can be read in polled mode (Poll).
func (b *Body) Polled() bool { return b.raw != nil }

// RawConn returns the connection's RawConn, nil when it has none (Raw).
func (b *Body) RawConn() syscall.RawConn { return b.raw }

// Open reports whether the body has not been closed.
func (b *Body) Open() bool {
	s := b.state.Load()
	return s == bodyIdle || s == bodyReading
}

// SetReadDeadline sets the read deadline of the connection: a Poll or Read
// waiting past it returns os.ErrDeadlineExceeded.
func (b *Body) SetReadDeadline(t time.Time) error { return b.interrupt.SetReadDeadline(t) }

// OnClose has f called after a close of the body, from the closing
// goroutine: a reader waiting without a goroutine of its own wakes to end.
func (b *Body) OnClose(f func()) { b.onClose.Store(&f) }

// Buffered reports whether bytes of the answer wait in the HTTP client's
// reader, so that the next read returns them at once. It looks as a read
// does (begin, end): between reads a close may free the reader meanwhile.
func (b *Body) Buffered() bool {
	if !b.begin() {
		return false
	}
	has := b.br != nil
	return b.end() && has
}

// begin marks a read in flight; false when the body was closed.
func (b *Body) begin() bool {
	if b.fd >= 0 { // inside a polled step, which began the read already
		return b.state.Load() == bodyReading
	}
	return b.state.CompareAndSwap(bodyIdle, bodyReading)
}

// end marks the read over, and releases the connection if the body was
// closed meanwhile (reporting false).
func (b *Body) end() bool {
	if b.fd >= 0 {
		return true // inside a polled step: Poll ends the read
	}
	if b.state.CompareAndSwap(bodyReading, bodyIdle) {
		return true
	}
	if b.state.CompareAndSwap(bodyInterrupted, bodyReleased) {
		b.free(false)
	}
	return false
}

// CloseWithError ends the body: the connection is released for reuse when
// the answer was read to its end, else to be closed.
func (b *Body) CloseWithError(error) error {
	for {
		switch b.state.Load() {
		case bodyReleased, bodyInterrupted:
			return nil
		case bodyReading:
			if b.state.CompareAndSwap(bodyReading, bodyInterrupted) {
				// Ends a read blocked in the poller; the reader sees the
				// state at its next read. Not Close: closing waits for
				// the reader's hold on the descriptor to end.
				b.interrupt.SetReadDeadline(interruptNow) //nolint:errcheck // the reader checks the state anyway
				b.closed()
				return nil
			}
		case bodyIdle:
			if b.state.CompareAndSwap(bodyIdle, bodyReleased) {
				// Read to its end, the connection is at a clean boundary
				// whatever the close is for (a consumer that hangs up just
				// after the last byte must not cost it).
				b.free(b.err == io.EOF && b.framing.Done() && !b.framing.Extra() && b.opts.KeepAlive)
				b.closed()
				return nil
			}
		}
	}
}

func (b *Body) closed() {
	if f := b.onClose.Load(); f != nil {
		(*f)()
	}
}

func (b *Body) free(reuse bool) {
	if b.br != nil {
		if reuse && b.br.Buffered() > 0 {
			reuse = false // the producer sent more than its answer
		}
		b.dropReader()
	}
	b.opts.Release(reuse)
}

func (b *Body) dropReader() {
	b.opts.ReleaseReader(b.br)
	b.br = nil
}
