package wire

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds a relayed stream's two ends on the wire: the producer's
// response body as it is read (Body), and the consumer's response as it is
// written (ChunkWriter).

// Body is a producer's HTTP/1.1 response body, read off its connection
// straight into the caller's buffer, each read decoded in place (Framing).
// The bytes the HTTP client's reader took past the header are read first,
// then the connection.
//
// One goroutine reads; CloseWithError may come from any goroutine. A close
// while a read is in flight wakes the read (a read deadline in the past)
// and the reader gives the connection back when its read returns;
// otherwise the close gives it back at once: for reuse when the response was
// read to its end, else to be closed.
//
// In polled mode (Poll) reads happen inside a RawConn callback and never
// block: a read that would returns syscall.EAGAIN, read(2)'s own response
// passed on (event.Scanner's polled sources return the same), and so does
// the read after one that came back short, since the socket was drained
// then, without asking the kernel (the runtime's poller, edge-triggered, will
// report new data). That saves the read per event that only finds nothing.
type Body struct {
	conn          net.Conn
	interrupt     net.Conn // conn, or the one it wraps: set deadlines from any goroutine
	framing       Framing
	br            *bufio.Reader // the HTTP client's reader, while it holds unread bytes
	releaseReader func(*bufio.Reader)
	release       func(reuse bool)
	unsolicited   func(n int)
	keepAlive     bool

	raw     syscall.RawConn // the TCP connection, for polled reads; nil for TLS
	fd      int             // in polled mode, the descriptor; -1 otherwise
	drained bool            // the last polled read came back short

	state atomic.Int32 // bodyIdle, bodyReading, bodyInterrupted, bodyReleased
	err   error        // the end of the body: io.EOF or what broke it

	// onClose, when set, is called after a close from any goroutine: a
	// stream waiting without a goroutine must wake to end.
	onClose atomic.Pointer[func()]

	// onDeadline, when set, is called by a Read that waited past the read
	// deadline (OnReadDeadline).
	onDeadline func() (next time.Time, err error)
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
	// Buffered holds what the HTTP client read past the response header, nil
	// when nothing; it is handed to ReleaseReader once read or at the end.
	Buffered      *bufio.Reader
	ReleaseReader func(*bufio.Reader)
	// Release gives the connection back, once, at the end: for reuse when
	// reuse is true (the response was read to a clean end on a connection
	// kept alive), else to be closed.
	Release func(reuse bool)
	// KeepAlive says the connection may serve another request after the
	// response.
	KeepAlive bool
	// Unsolicited, when set, is told at the end, once and before Release,
	// of the n bytes the producer sent after the response was complete
	// (with its last bytes, or left in Buffered): bytes of no response, for
	// which the connection is not reused.
	Unsolicited func(n int)
}

// ErrBodyClosed is a read of a Body that was closed (CloseWithError).
var ErrBodyClosed = errors.New("the producer's response was closed")

const (
	bodyIdle int32 = iota
	bodyReading
	bodyInterrupted // closed during a read: the reader releases
	bodyReleased
)

// interruptNow is a read deadline long past: it wakes a blocked read.
var interruptNow = time.Unix(1, 0)

// NewBody returns the body of a response read from conn, framed as
// contentLength says (NewFraming).
func NewBody(conn net.Conn, contentLength int, o BodyOptions) *Body {
	b := &Body{conn: conn, interrupt: o.Interrupt, framing: NewFraming(contentLength), br: o.Buffered,
		releaseReader: o.ReleaseReader, release: o.Release, unsolicited: o.Unsolicited, keepAlive: o.KeepAlive, raw: o.Raw, fd: -1}
	if b.interrupt == nil {
		b.interrupt = conn
	}
	if b.br != nil && b.br.Buffered() == 0 {
		b.dropReader()
	}
	return b
}

// Read reads data of the response into p.
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
		b.err = io.EOF // an empty response (Content-Length: 0)
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
				return 0, syscall.EAGAIN
			}
			n, err = ReadFD(b.fd, p)
			if err == syscall.EAGAIN {
				return 0, err
			}
			if n == 0 && err == nil {
				err = io.EOF // read(2)'s end of the stream
			}
			b.drained = n > 0 && n < len(p)
		default:
			n, err = b.conn.Read(p)
			if err != nil && b.onDeadline != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				if n > 0 {
					err = nil // the next read times out again
				} else if err = b.readOn(); err == nil {
					continue
				}
			}
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

// readOn runs onDeadline and sets the deadline it returns, unless the body
// was closed: a close's past deadline (CloseWithError) ends the read, and
// one it set while onDeadline ran must not be replaced by the next.
func (b *Body) readOn() error {
	if b.state.Load() != bodyReading {
		return ErrBodyClosed
	}
	next, err := b.onDeadline()
	if err != nil {
		return err
	}
	if err := b.interrupt.SetReadDeadline(next); err != nil {
		return err
	}
	if b.state.Load() != bodyReading {
		return ErrBodyClosed
	}
	return nil
}

// Poll runs step inside the connection's RawConn read, each time the
// connection may have input: step reads the body (Read, which then never
// blocks but returns syscall.EAGAIN) and returns false to wait until the
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

// Drained reports whether the next read, in the Poll step under way,
// returns syscall.EAGAIN without asking the kernel: the last one came back
// short (see Poll).
func (b *Body) Drained() bool { return b.fd >= 0 && b.drained }

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

// OnReadDeadline has f called, on the reading goroutine, when a Read (not
// a Poll) waits past the read deadline (SetReadDeadline) while the body is
// open: f may write elsewhere (a keep-alive) and returns the next
// deadline, which the read sets before it waits on. The read so never
// returns the timeout, and whatever decodes the body above it never sees
// one (compress/flate keeps the first error its source returns, for ever).
// An error from f ends the body with it. Set it before the first Read, on
// the goroutine that reads.
func (b *Body) OnReadDeadline(f func() (next time.Time, err error)) { b.onDeadline = f }

// OnClose has f called after a close of the body, from the closing
// goroutine: a reader waiting without a goroutine of its own wakes to end.
func (b *Body) OnClose(f func()) { b.onClose.Store(&f) }

// Buffered reports whether bytes of the response wait in the HTTP client's
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
// the response was read to its end, else to be closed.
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
				b.free(b.err == io.EOF && b.framing.Done() && b.framing.Extra() == 0 && b.keepAlive)
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
	unsolicited := 0
	if b.framing.Done() {
		unsolicited = b.framing.Extra()
	}
	if b.br != nil {
		if n := b.br.Buffered(); n > 0 {
			reuse = false // the producer sent more than its response
			if b.framing.Done() {
				unsolicited += n
			}
		}
		b.dropReader()
	}
	if unsolicited > 0 && b.unsolicited != nil {
		b.unsolicited(unsolicited)
	}
	b.release(reuse)
}

func (b *Body) dropReader() {
	b.releaseReader(b.br)
	b.br = nil
}

// ChunkWriter writes a stream's response to the consumer's connection: the
// header, then the body, in HTTP/1.1 chunks when chunked (else as it is, for
// a consumer that reads to the connection's end). What is written between
// two flushes goes out as one chunk in one write, with the header when it has
// not gone yet and the body's end when it is the last. It holds a buffer
// only between a write and the flush that follows (a pooled one), so an
// idle stream holds none. It is used by one goroutine.
//
// Frames taken borrowed (WriteBorrowed) that lie end to end in the caller's
// buffer are written from there by the next flush, with their chunk's size
// line and CRLF, in one call when the connection writes pieces at once
// (VecWriter: one writev(2) on a wire.Conn).
//
// The timeout is a stall limit: a write fails with os.ErrDeadlineExceeded,
// and so does the writer from then on, once the consumer has taken no byte
// of it for that long (within an eighth, see arm). Bytes taken move the
// limit on, so a large event read slowly but steadily goes out whole. On a
// Conn the limit moves each time the write waits for room after bytes went
// out; on another connection (no raw writes: a platform without them) a
// write that ran out its limit goes on while the last one took bytes, so a
// consumer that stops is cut within twice the limit. That needs a
// connection whose writes go on after a deadline, as a net.TCPConn's do: a
// crypto/tls connection fails every write after one timed out, and is cut
// at the limit.
type ChunkWriter struct {
	conn     net.Conn    // what the response is written to
	vec      VecWriter   // conn, when it writes pieces in one call; nil otherwise
	stall    stallWriter // conn, when it moves the deadline as bytes go out; nil otherwise or without a timeout
	timeout  time.Duration
	deadline time.Time // the write deadline set last

	// writeSeq moves at the start and at the end of each write to conn:
	// odd while one is in flight (WriteSeq).
	writeSeq atomic.Uint64

	// header is the response's status line and headers until they are written,
	// by the first flush (or write); the caller leaves it unchanged.
	header []byte

	buf *[]byte // pending output after chunkRoom bytes of room; nil when none
	err error

	// span is what WriteBorrowed took without a copy: frames lying end to
	// end in the caller's buffer, written from there by the next flush.
	// Set only while buf is nil.
	span []byte

	// A chunk written from where its bytes lie: its size line, and its CRLF
	// followed by the body's last chunk (a chunk's tail is end[:2], the
	// last one's all of end).
	sizeLine [16]byte
	end      [len("\r\n0\r\n\r\n")]byte

	chunked bool
	// holdHeader makes the first flush with only the header pending write
	// nothing (HoldHeader).
	holdHeader bool
}

// VecWriter writes up to four pieces in that order as one write, returning
// what Write would for their concatenation: a chunk's size line, its bytes
// from where they lie and its CRLF, behind the response header.
type VecWriter interface {
	WriteVec(a, b, c, d []byte) (int, error)
}

const (
	// chunkRoom is kept free before the pending bytes for the chunk's
	// size line: up to 8 hex digits and CRLF.
	chunkRoom = 10
	// maxPending is the most a writer buffers before it writes out
	// without waiting for a flush.
	maxPending = 32 << 10
)

var pendingPool = sync.Pool{New: func() any {
	b := make([]byte, chunkRoom, chunkRoom+maxPending+len("\r\n0\r\n\r\n"))
	return &b
}}

// Init makes w the writer of a response to conn, chunked or not, each write
// within timeout (conn's write deadline; zero or less: none). A
// ChunkWriter is used in place: it is not copied.
func (w *ChunkWriter) Init(conn net.Conn, chunked bool, timeout time.Duration) {
	*w = ChunkWriter{conn: conn, chunked: chunked, timeout: timeout}
	w.vec, _ = conn.(VecWriter)
	if timeout > 0 {
		w.stall, _ = conn.(stallWriter)
	}
	copy(w.end[:], "\r\n0\r\n\r\n")
}

// SetHeader has the response header (status line and headers) written with the
// first flush, in the same write as the first events when they are there.
// header is borrowed until then.
func (w *ChunkWriter) SetHeader(header []byte) { w.header = header }

// Header returns the header SetHeader set, until it is written (then nil).
func (w *ChunkWriter) Header() []byte { return w.header }

// HoldHeader makes the first flush with only the header pending write nothing:
// the producer's first events are buffered already (they came with its
// header), and the header goes out with them.
func (w *ChunkWriter) HoldHeader() { w.holdHeader = true }

// Conn returns the connection the response is written to.
func (w *ChunkWriter) Conn() net.Conn { return w.conn }

// Err returns the error that failed a write, nil when none has.
func (w *ChunkWriter) Err() error { return w.err }

// WriteSeq returns a number that moves at the start and at the end of
// every write to the connection, and is odd while one is in flight: from
// another goroutine, whether the stream has been writing (not waiting for
// its source) since it last asked. Safe from any goroutine.
func (w *ChunkWriter) WriteSeq() uint64 { return w.writeSeq.Load() }

// Write buffers p for the next flush.
func (w *ChunkWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.span != nil {
		w.adopt()
	}
	if w.buf != nil && len(*w.buf)-chunkRoom+len(p) > maxPending {
		if err := w.Flush(); err != nil {
			return 0, err
		}
	}
	if len(p) > maxPending {
		// A large event goes out as its own chunk, from where it is.
		if err := w.write(p, false); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if w.buf == nil {
		w.buf = pendingPool.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
}

// WriteBorrowed is Write for bytes the caller leaves unchanged until the
// next flush (the scanner's buffer: the stream's loop flushes before its
// bytes move). Frames that lie end to end there, as a burst of frames
// passed through does, go out from where they are in one chunk, with no
// copy into the pending buffer.
func (w *ChunkWriter) WriteBorrowed(p []byte) error {
	n := len(w.span)
	switch {
	case w.err != nil:
		return w.err
	case w.buf != nil || len(p) == 0 || len(p) > maxPending || w.vec == nil:
		// Copied: behind copied bytes, too large to hold, or on a
		// connection that cannot write a chunk from two places at once.
	case n == 0:
		w.span = p
		return nil
	case n+len(p) <= cap(w.span) && &w.span[:n+1][n] == &p[0]:
		if n+len(p) > maxPending {
			if err := w.Flush(); err != nil {
				return err
			}
			w.span = p
			return nil
		}
		w.span = w.span[:n+len(p)]
		return nil
	}
	_, err := w.Write(p)
	return err
}

// adopt copies the span into the pending buffer, for bytes that must
// follow it there.
func (w *ChunkWriter) adopt() {
	w.buf = pendingPool.Get().(*[]byte)
	*w.buf = append(*w.buf, w.span...)
	w.span = nil
}

// Flush writes what is pending, as one chunk (see HoldHeader).
func (w *ChunkWriter) Flush() error {
	if w.holdHeader {
		w.holdHeader = false
		if w.header != nil && w.buf == nil && w.span == nil && w.err == nil {
			return nil
		}
	}
	return w.flush(false)
}

// End writes what is pending and the end of the body (the last chunk),
// unless writing failed before.
func (w *ChunkWriter) End() error {
	return w.flush(true)
}

func (w *ChunkWriter) flush(last bool) error {
	if w.err != nil {
		w.Release()
		return w.err
	}
	if w.span != nil {
		span := w.span
		w.span = nil
		return w.write(span, last)
	}
	if w.buf == nil {
		switch {
		case last && w.chunked:
			return w.emit(w.end[2:], nil, nil) // the last chunk alone
		case w.header != nil:
			return w.emit(nil, nil, nil)
		}
		return nil
	}
	b := *w.buf
	out := b[chunkRoom:]
	if w.chunked {
		start := chunkRoom
		if n := len(b) - chunkRoom; n > 0 {
			var size [16]byte
			line := append(strconv.AppendUint(size[:0], uint64(n), 16), '\r', '\n')
			start -= len(line)
			copy(b[start:], line)
			b = append(b, '\r', '\n')
		}
		if last {
			b = append(b, "0\r\n\r\n"...)
		}
		out = b[start:]
	}
	err := w.emit(out, nil, nil)
	*w.buf = b[:chunkRoom]
	w.Release()
	return err
}

// Release drops what is pending unwritten and gives the pending buffer
// back to its pool: at the end of a stream that will write no more.
func (w *ChunkWriter) Release() {
	w.span = nil
	if w.buf != nil {
		*w.buf = (*w.buf)[:chunkRoom]
		pendingPool.Put(w.buf)
		w.buf = nil
	}
}

// write writes p as one chunk of its own (nothing else is pending but the
// header), followed by the body's end when last.
func (w *ChunkWriter) write(p []byte, last bool) error {
	if !w.chunked {
		return w.emit(p, nil, nil)
	}
	line := append(strconv.AppendUint(w.sizeLine[:0], uint64(len(p)), 16), '\r', '\n')
	tail := w.end[:2]
	if last {
		tail = w.end[:]
	}
	return w.emit(line, p, tail)
}

// emit writes the header when it is still to go, then a, b and c, within the
// stall limit: in one call on a VecWriter.
func (w *ChunkWriter) emit(a, b, c []byte) error {
	if err := w.arm(); err != nil {
		return err
	}
	header := w.header
	w.header = nil
	w.writeSeq.Add(1)
	defer w.writeSeq.Add(1)
	switch {
	case w.stall != nil:
		_, err := w.stall.writeVecArmed(w, header, a, b, c)
		return w.fail(err)
	case w.vec != nil:
		_, err := w.vec.WriteVec(header, a, b, c)
		return w.fail(err)
	}
	for _, p := range [...][]byte{header, a, b, c} {
		for len(p) > 0 {
			n, err := w.conn.Write(p)
			if err == nil {
				break
			}
			if n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
				return w.fail(err)
			}
			// The consumer took bytes within the limit: it is reading.
			p = p[n:]
			if err := w.arm(); err != nil {
				return err
			}
		}
	}
	return nil
}

// rearm is arm for a Conn's write that waits for room after bytes went
// out (writeVecArmed); an error fails the writer (arm), and the write
// ends at the deadline set before.
func (w *ChunkWriter) rearm() { w.arm() } //nolint:errcheck // recorded in w.err

// arm moves the write deadline to timeout from now, when it is less than
// seven eighths of that away: a consumer that takes no byte for about the
// timeout is given up, at the cost of a timer update every timeout/8 rather
// than on every write.
func (w *ChunkWriter) arm() error {
	if w.timeout <= 0 || time.Until(w.deadline) > w.timeout-w.timeout/8 { // the monotonic clock alone
		return nil
	}
	w.deadline = time.Now().Add(w.timeout)
	return w.fail(w.conn.SetWriteDeadline(w.deadline))
}

func (w *ChunkWriter) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}
