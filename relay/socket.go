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

	// noWait makes Read return errNoWait without a system call (sentMore);
	// set and cleared by the one goroutine that reads then.
	noWait bool
	// idleRead: the server's read that inPlace ended waited for a
	// request's first byte, so no pipelined request was buffered.
	idleRead bool
	// bodyDeadline, when set, is applied by the next read that goes to the
	// socket (bodyBudget.read): a body that came with its header moves no
	// deadline. Used by the goroutine that serves the connection.
	bodyDeadline time.Time
	hangup       atomic.Int32 // registration with watcher (watchHangup); 0 when none
	header       []byte       // respond renders response headers here, one run at a time
	reqHeader    headerScan   // on only for accepted connections
	watcher      *wire.Poller
	headerWait   *headerWait
	handover     wire.Handover[*relayedStream] // carrier.go

	// inPlace is set while the server finishes a request whose stream was
	// handed over: its writes are dropped, its next read ends its loop, and
	// its close is skipped. Used by the goroutine that serves the connection.
	inPlace atomic.Bool
}

// servedInPlace reports whether ctx is a pipelined request read after one
// whose stream was handed over in place: the handler must do nothing, and
// the connection is closed once the stream ends.
func servedInPlace(ctx *fasthttp.RequestCtx) bool {
	sc, ok := ctx.Conn().(*socketConn)
	if ok && sc.inPlace.Load() {
		sc.idleRead = false // the request was read: the connection is not kept alive
		ctx.SetConnectionClose()
		return true
	}
	return false
}

// Write drops the server's writes while inPlace: fasthttp has no other way
// to end its loop on a connection without writing a response or closing it.
func (s *socketConn) Write(p []byte) (int, error) {
	if s.inPlace.Load() {
		return len(p), nil
	}
	return s.Conn.Write(p)
}

var errNoWait = errors.New("relay: read would wait")

// newSocketConn wraps c when it is a TCP connection on a platform with raw
// reads.
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

func (s *socketConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.inPlace.Load() {
		// A read of one byte or of the whole buffer is the server's wait for
		// a request's first byte. io.EOF ends its loop without an allocation
		// (any other error it boxes into an ErrNothingRead).
		// A pipelined request's body read so goes to the ErrorHandler
		// (servedInPlace).
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

// rawConnOf returns conn's RawConn, a socketConn's own (its TCPConn would
// make one per call).
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
