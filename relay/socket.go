package relay

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// socketConn is a consumer's or producer's TCP connection read and written
// with raw system calls (wire.Conn), with the relay's per-connection state.
type socketConn struct {
	wire.Conn

	// noWait makes Read return errNoWait at once, without a system call
	// or the poller: sentMore's question to the server's reader of the
	// request, set and cleared by the one goroutine that reads then.
	noWait bool
	// idleRead: the server's read that inPlace ended waited for a
	// request's first byte, so no pipelined request was buffered.
	idleRead bool
	// bodyDeadline, when set, is the read deadline of the request body
	// being read (bodyBudget.read), set on the connection by the next read
	// that goes to the socket: a body that came whole with its header moves
	// none. Set and cleared by the goroutine that serves the connection.
	bodyDeadline time.Time
	// hangup is the connection's registration with watcher (watchHangup),
	// from its first run to its close; 0 when none.
	hangup atomic.Int32
	// header is the buffer the response headers are rendered into (respond),
	// one run at a time.
	header []byte
	// reqHeader follows the header of the consumer's request being read, for a
	// bare LF (headscan.go); on only for accepted connections.
	reqHeader headScan
	watcher   *wire.Poller // the Poller of hangup
	// headerWait serves the connection's requests one after another (Relay.do).
	headerWait *headerWait

	// handover hands a persistent connection's next stream from the request's
	// handler to the goroutine that serves the connection (carrier.go).
	handover wire.Handover[streamResponse]

	// inPlace is set while the server finishes a request whose stream was
	// handed over (handOver): its writes are dropped, its next read ends
	// its loop, handlers write nothing (servedInPlace), and its close is
	// skipped. Set and cleared on the goroutine that serves the connection.
	inPlace atomic.Bool
}

// servedInPlace reports whether ctx is a request the server read after
// one whose stream was handed over in place (a pipelined request): the
// handler must write nothing (its response is dropped) and do nothing; the
// connection is closed once the stream ends.
func servedInPlace(ctx *fasthttp.RequestCtx) bool {
	sc, ok := ctx.Conn().(*socketConn)
	if ok && sc.inPlace.Load() {
		sc.idleRead = false // the request was read: the connection is not kept
		ctx.SetConnectionClose()
		return true
	}
	return false
}

// Write is wire.Conn's, but for the server's response to a request whose
// stream was handed over in place (inPlace): dropped. fasthttp has no way
// to end its loop on a connection without writing a response or closing
// it; this and the read that returns io.EOF are that way.
func (s *socketConn) Write(p []byte) (int, error) {
	if s.inPlace.Load() {
		return len(p), nil
	}
	return s.Conn.Write(p)
}

// errNoWait is a read of a socketConn told not to wait (noWait).
var errNoWait = errors.New("relay: read would wait")

// newSocketConn wraps c when it is a TCP connection on a platform with raw
// reads; otherwise it returns c.
func newSocketConn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	s := &socketConn{}
	if s.Conn.Init(tc) != nil {
		return c
	}
	return s
}

// Close ends the connection's hangup registration, if it has one, and
// closes it.
func (s *socketConn) Close() error {
	if s.inPlace.Load() {
		return nil // the server's close after its loop: the stream has the connection
	}
	if token := s.hangup.Swap(0); token != 0 {
		s.watcher.Forget(token)
	}
	s.handover.Close()
	return s.TCPConn.Close()
}

// Read is wire.Conn's, but for a read told not to wait (noWait), the
// request header's bare LF (reqHeader), the server's read after a stream
// was handed over in place (inPlace) and a request body's deadline, set
// before the read (bodyDeadline).
func (s *socketConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.inPlace.Load() {
		// The server's wait for a request's first byte: its one-byte read,
		// or its reader's fill with nothing buffered (a read of its whole
		// buffer). A pipelined request whose body's first byte is read so
		// fails on its way to the ErrorHandler, which says so
		// (servedInPlace).
		// io.EOF, the end of a connection between requests, ends the
		// server's loop silently and without an allocation (any other
		// error it boxes into an ErrNothingRead).
		s.idleRead = len(p) == 1 || len(p) == readBufferSize
		return 0, io.EOF
	}
	if s.noWait {
		return 0, errNoWait
	}
	if s.reqHeader.bad {
		return 0, errBareLF
	}
	if !s.bodyDeadline.IsZero() {
		if err := s.Conn.SetReadDeadline(s.bodyDeadline); err != nil {
			return 0, err
		}
		s.bodyDeadline = time.Time{}
	}
	n, err := s.Conn.Read(p)
	if err != nil {
		return 0, err
	}
	if s.reqHeader.on && s.reqHeader.scan(p[:n]) {
		return 0, errBareLF // the request is refused: its bytes go unread
	}
	return n, nil
}

// rawConnOf returns conn's RawConn: the one a socketConn holds (asking its
// TCPConn would make another per call), else the connection's own.
func rawConnOf(conn net.Conn) (syscall.RawConn, error) {
	switch c := conn.(type) {
	case *socketConn:
		return c.RawConn(), nil
	case syscall.Conn:
		return c.SyscallConn()
	}
	return nil, errNotSyscallConn
}

var errNotSyscallConn = errors.New("the connection has no descriptor")

// Listener returns ln whose accepted TCP connections are read and written
// with raw system calls (socketConn). Serve the relay's server on it.
func Listener(ln net.Listener) net.Listener { return socketListener{ln} }

type socketListener struct{ net.Listener }

func (l socketListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	nc := newSocketConn(c)
	if sc, ok := nc.(*socketConn); ok {
		sc.reqHeader.arm() // the first request's header comes first
	}
	return nc, nil
}
