package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/wire"
)

// socketConn is a consumer's or producer's connection read and written
// raw (wire.Conn), with what the relay keeps per connection.
//
// socketConn makes a run's whole path raw: the producer's connections
// (dialer; the answer's body is read by descriptor in wire.Body's polled
// mode) and the consumers' (Listener, and consumerWriter for a connection
// served without it).
type socketConn struct {
	wire.Conn

	// noWait makes Read answer errNoWait at once, without a system call
	// or the poller: sentMore's question to the server's reader of the
	// request, set and cleared by the one goroutine that reads then.
	noWait bool
	// hangup is the connection's registration with watcher, the Relay's
	// Poller (watchHangup), kept from its first run to its close; 0 when
	// none. (Beside noWait: the two share a word.)
	hangup atomic.Int32
	// head is the buffer the answers' heads are rendered into (respond),
	// one run at a time.
	head []byte
	// reqHead follows the head of the consumer's request being read, for a
	// bare LF (headscan.go); on only for accepted connections.
	reqHead headScan
	watcher *wire.Poller // the Poller of hangup

	// handover hands a kept connection's next stream from the server's
	// hijack goroutine to the goroutine that served the request
	// (handover.go).
	handover wire.Handover[hijackedStream]

	// ahead holds what the read of a request's first byte found beyond it
	// (readAhead), from aheads, until the reads that follow take it.
	ahead   *[]byte
	aheadN  int // bytes of ahead read
	aheadAt int // bytes of ahead taken
	aheadFn func(fd uintptr) bool
	aheadEr error
	aheads  *sync.Pool // the Listener's buffers for ahead; nil: no read ahead

	// inPlace is set while the server finishes a request whose stream was
	// handed over without a hijack (respond): its writes are dropped, its
	// next read ends its loop (idleRead records that it was the wait for
	// a request's first byte, fasthttp's one-byte read, made only when it
	// has nothing buffered: no pipelined request is lost), the request
	// handlers answer nothing more (servedInPlace), and its close is
	// skipped. Set and cleared on the goroutine that serves the connection.
	inPlace  atomic.Bool
	idleRead bool
}

// servedInPlace reports whether ctx is a request the server read after
// one whose stream was handed over in place (a pipelined request): the
// handler must answer nothing (its answer is dropped) and do nothing; the
// connection is closed once the stream ends.
func servedInPlace(ctx *fasthttp.RequestCtx) bool {
	sc, ok := ctx.Conn().(*socketConn)
	if ok && sc.inPlace.Load() {
		ctx.SetConnectionClose()
		return true
	}
	return false
}

// errInPlace ends the server's loop on a connection whose stream was
// handed over in place (inPlace).
var errInPlace = errors.New("relay: the connection's stream runs in place")

// Write is wire.Conn's, but for the server's answer to a request whose
// stream was handed over in place (inPlace): dropped.
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
// request head's bare LF (reqHead) and the read ahead of a request's first
// byte (readAhead).
func (s *socketConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.inPlace.Load() {
		s.idleRead = len(p) == 1
		return 0, errInPlace
	}
	if s.noWait && s.ahead == nil { // bytes read ahead were sent: they count
		return 0, errNoWait
	}
	if s.reqHead.bad {
		return 0, errBareLF
	}
	var n int
	var err error
	switch {
	case s.ahead != nil:
		n = s.takeAhead(p)
	case len(p) == 1 && s.aheads != nil && s.reqHead.atStart():
		n, err = s.readAhead(p)
	default:
		n, err = s.Conn.Read(p)
	}
	if err != nil {
		return 0, err
	}
	if s.reqHead.on && s.reqHead.scan(p[:n]) {
		return 0, errBareLF // the request is refused: its bytes go unread
	}
	return n, nil
}

// aheadSize is the read ahead's buffer: a request of a chat UI, its head
// and a short RunAgentInput, fits.
const aheadSize = 4 << 10

// readAhead is the server's read of a request's first byte (fasthttp reads
// one byte before it takes a read buffer for the request, so that an idle
// connection holds none): it reads what has come of the request into a
// buffer of the Listener's, in one system call where the byte and the
// rest took two, and the reads that follow take the rest from there
// (takeAhead). The buffer is taken only once the socket is readable, and
// goes back once its bytes are taken: an idle connection holds none.
func (s *socketConn) readAhead(p []byte) (int, error) {
	if s.aheadFn == nil {
		s.aheadFn = s.aheadSome // made once: a read allocates nothing
	}
	s.aheadEr = nil
	if err := s.RawConn().Read(s.aheadFn); err != nil {
		s.releaseAhead()
		return 0, s.opError(err)
	}
	switch {
	case s.aheadEr != nil:
		s.releaseAhead()
		return 0, s.opError(os.NewSyscallError("read", s.aheadEr))
	case s.aheadN == 0:
		s.releaseAhead()
		return 0, io.EOF
	}
	return s.takeAhead(p), nil
}

// aheadSome is readAhead's read, inside the RawConn's: false when the
// socket has nothing yet, the buffer given back for the wait.
func (s *socketConn) aheadSome(fd uintptr) bool {
	if s.ahead == nil {
		s.ahead = s.aheads.Get().(*[]byte)
	}
	n, err := wire.ReadFD(int(fd), *s.ahead)
	if err == syscall.EAGAIN {
		s.releaseAhead()
		return false
	}
	s.aheadN, s.aheadAt, s.aheadEr = n, 0, err
	return true
}

// takeAhead copies what readAhead read and p can take into p.
func (s *socketConn) takeAhead(p []byte) int {
	n := copy(p, (*s.ahead)[s.aheadAt:s.aheadN])
	if s.aheadAt += n; s.aheadAt == s.aheadN {
		s.releaseAhead()
	}
	return n
}

func (s *socketConn) releaseAhead() {
	if s.ahead != nil {
		s.aheads.Put(s.ahead)
		s.ahead, s.aheadN, s.aheadAt = nil, 0, 0
	}
}

func (s *socketConn) opError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
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
func Listener(ln net.Listener) net.Listener {
	return socketListener{ln, &sync.Pool{New: func() any { b := make([]byte, aheadSize); return &b }}}
}

type socketListener struct {
	net.Listener
	aheads *sync.Pool // the buffers of the requests' read ahead (socketConn.readAhead)
}

func (l socketListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	nc := newSocketConn(c)
	if sc, ok := nc.(*socketConn); ok {
		sc.reqHead.arm() // the first request's head comes first
		sc.aheads = l.aheads
	}
	return nc, nil
}
