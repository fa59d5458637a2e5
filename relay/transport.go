package relay

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/wire"

	"github.com/agui-relay/agui-relay/event"
	"github.com/valyala/fasthttp"
)

// streamTransport is the fasthttp client's round trip for the relay
// (NewClient installs it): fasthttp still pools, dials and caps the
// connections to the producer and writes the request, but a streamed
// answer's body is read by the relay itself (streamBody), straight from
// the connection into the caller's buffer. fasthttp's own streamed body
// reads through the client's buffered reader, held for the whole stream
// (4 KiB per open stream, and a goroutine parked deep in its chunk
// parser), and hands out at most one chunk per read. Answers that are not
// streamed go through fasthttp's transport unchanged.
type streamTransport struct{}

// maxInterim bounds the 1xx answers skipped before the real one.
const maxInterim = 10

func (streamTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if !resp.StreamBody || resp.SkipBody || req.Header.IsHead() {
		return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	}
	cc, err := hc.AcquireConn(0, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	resp.ParseNetConn(conn)
	// A consumer that hangs up before the head interrupts the wait (see
	// headWait), on the connection under firstByteConn, whose deadline
	// state belongs to this goroutine.
	hw := headWaitOf(req)
	inner := conn
	if fc, ok := conn.(*firstByteConn); ok {
		inner = fc.Conn
	}
	if err := hw.attach(inner); err != nil {
		hc.CloseConn(cc)
		return false, err
	}

	var deadline time.Time
	if hc.WriteTimeout > 0 {
		deadline = time.Now().Add(hc.WriteTimeout)
	}
	if err := hw.setDeadline(conn.SetWriteDeadline, deadline); err != nil {
		hc.CloseConn(cc)
		return err != errHeadWaitGone, err
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		hc.CloseConn(cc)
		if hw.detach() {
			return false, errHeadWaitGone // the interrupted write
		}
		if isTimeout(err) {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}

	deadline = time.Time{}
	if hc.ReadTimeout > 0 {
		deadline = time.Now().Add(hc.ReadTimeout)
	}
	if err := hw.setDeadline(conn.SetReadDeadline, deadline); err != nil {
		hc.CloseConn(cc)
		return err != errHeadWaitGone, err
	}
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	br := hc.AcquireReader(conn)
	err = resp.Header.Read(br)
	for n := 0; err == nil && resp.StatusCode() >= 100 && resp.StatusCode() < 200 && resp.StatusCode() != fasthttp.StatusSwitchingProtocols; n++ {
		if n >= maxInterim {
			err = errors.New("the producer sent too many interim (1xx) answers")
			break
		}
		err = resp.Header.Read(br)
	}
	if hw.detach() {
		err = errHeadWaitGone // whatever the interrupted read said
	}
	if err != nil {
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		return err != errHeadWaitGone, err
	}
	closeConn := req.ConnectionClose() || resp.ConnectionClose()
	status := resp.StatusCode()
	if status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified {
		// No body (and a 101's connection is not HTTP any more).
		reuse := !closeConn && status >= 200 && br.Buffered() == 0
		hc.ReleaseReader(br)
		if reuse {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
		return false, nil
	}
	b := &streamBody{
		conn:    conn,
		framing: wire.NewFraming(resp.Header.ContentLength()),
		br:      br,
		release: func(reuse bool) {
			if reuse {
				hc.ReleaseConn(cc)
			} else {
				hc.CloseConn(cc)
			}
		},
		releaseReader: hc.ReleaseReader,
		keepAlive:     !closeConn,
		fd:            -1,
	}
	if b.br.Buffered() == 0 {
		b.dropReader()
	}
	b.interrupt = conn
	if fc, ok := conn.(*firstByteConn); ok {
		// firstByteConn's deadline state belongs to the reader.
		b.interrupt = fc.Conn
		// The dialer's socketConn, where reads by descriptor work.
		if sc, ok := fc.Conn.(*socketConn); ok {
			b.raw = sc.rc
		}
	}
	resp.SetBodyStream(b, resp.Header.ContentLength())
	return false, nil
}

// streamBody is a producer's answer, read by the relay from the connection
// (see streamTransport). The bytes fasthttp's reader took past the header
// are read first, then the connection, each read decoded in place.
//
// One goroutine reads; CloseWithError may come from any goroutine. A close
// while a read is in flight wakes the read (a read deadline in the past)
// and the reader closes the connection when its read returns; otherwise the
// close gives the connection back at once: to the pool when the answer was
// read to its end, else closed.
//
// In polled mode (pollRead) reads happen inside a RawConn callback and
// never block: a read that would returns event.ErrWouldBlock, and so does the
// read after one that came back short, since the socket was drained then,
// without asking the kernel (the runtime's poller, edge-triggered, will
// report new data). That saves the read per event that only finds nothing.
type streamBody struct {
	conn          net.Conn
	interrupt     net.Conn // conn, or the one it wraps: set deadlines from any goroutine
	framing       wire.Framing
	br            *bufio.Reader // fasthttp's reader, while it holds unread bytes
	release       func(reuse bool)
	releaseReader func(*bufio.Reader)
	keepAlive     bool

	raw     syscall.RawConn // the TCP connection, for polled reads; nil for TLS
	fd      int             // in polled mode, the descriptor; -1 otherwise
	drained bool            // the last polled read came back short

	state atomic.Int32 // bodyIdle, bodyReading, bodyInterrupted, bodyReleased
	err   error        // the end of the body: io.EOF or what broke it

	// onClose, when set, is called after a close from any goroutine: a
	// parked stream (relayedStream.park) must wake to end.
	onClose atomic.Pointer[func()]
}

const (
	bodyIdle int32 = iota
	bodyReading
	bodyInterrupted // closed during a read: the reader releases
	bodyReleased
)

var errBodyClosed = errors.New("the producer's answer was closed")

// interruptNow is a read deadline long past: it wakes a blocked read.
var interruptNow = time.Unix(1, 0)

// Read reads data of the answer into p.
func (b *streamBody) Read(p []byte) (int, error) {
	if !b.begin() {
		return 0, errBodyClosed
	}
	n, err := b.read(p)
	if !b.end() && err != io.EOF {
		// Closed meanwhile: whatever the interrupted read returned (the
		// past deadline's timeout) was the relay's doing, not the
		// producer's. An end that came with the last bytes still stands.
		err = errBodyClosed
	}
	return n, err
}

func (b *streamBody) read(p []byte) (int, error) {
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
				return 0, event.ErrWouldBlock
			}
			n, err = wire.ReadFD(b.fd, p)
			if err == syscall.EAGAIN {
				return 0, event.ErrWouldBlock
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
			b.err = wire.ErrOverrun
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

// pollRead runs loop inside the connection's RawConn read: loop reads the
// body (Read, in polled mode) and returns false to wait until the
// connection is readable, true when it is done. It reports false when the
// body cannot be polled (TLS, no descriptor); the caller then reads it the
// ordinary way. err is the poller's (the connection closed, by a cancel).
func (b *streamBody) pollRead(loop func() bool) (polled bool, err error) {
	if b.raw == nil || !b.begin() {
		return false, nil
	}
	// A new RawConn read forgets the readiness the poller recorded, so its
	// first read must ask the kernel: data may be waiting without an edge
	// to come.
	b.drained = false
	err = b.raw.Read(func(fd uintptr) bool {
		b.fd = int(fd)
		done := loop()
		b.fd = -1
		return done
	})
	b.fd = -1
	if !b.end() {
		err = errBodyClosed // as Read: the interruption is not the producer's error
	}
	return true, err
}

// buffered reports whether bytes of the answer wait in fasthttp's reader,
// so that the next read returns them at once. It looks as a read does
// (begin, end): between reads a close may free the reader meanwhile.
func (b *streamBody) buffered() bool {
	if !b.begin() {
		return false
	}
	has := b.br != nil
	return b.end() && has
}

// begin marks a read in flight; false when the body was closed.
func (b *streamBody) begin() bool {
	if b.fd >= 0 { // inside a polled loop, which began the read already
		return b.state.Load() == bodyReading
	}
	return b.state.CompareAndSwap(bodyIdle, bodyReading)
}

// end marks the read over, and releases the connection if the body was
// closed meanwhile (reporting false).
func (b *streamBody) end() bool {
	if b.fd >= 0 {
		return true // inside a polled loop: pollRead ends the read
	}
	if b.state.CompareAndSwap(bodyReading, bodyIdle) {
		return true
	}
	if b.state.CompareAndSwap(bodyInterrupted, bodyReleased) {
		b.free(false)
	}
	return false
}

// CloseWithError ends the body: the connection goes back to the pool when
// the answer was read to its end, else it is closed.
func (b *streamBody) CloseWithError(err error) error {
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
				b.free(b.err == io.EOF && b.framing.Done() && !b.framing.Extra() && b.keepAlive)
				b.closed()
				return nil
			}
		}
	}
}

func (b *streamBody) closed() {
	if f := b.onClose.Load(); f != nil {
		(*f)()
	}
}

func (b *streamBody) free(reuse bool) {
	if b.br != nil {
		if reuse && b.br.Buffered() > 0 {
			reuse = false // the producer sent more than its answer
		}
		b.dropReader()
	}
	b.release(reuse)
}

func (b *streamBody) dropReader() {
	b.releaseReader(b.br)
	b.br = nil
}

var _ fasthttp.ReadCloserWithError = (*streamBody)(nil)
