package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agui-relay/agui-relay/wire"
)

// socketConn is a TCP connection whose Read and Write make their system
// calls raw (wire.ReadFD, wire.WritevFD) inside the connection's RawConn calls: the
// waiting, the deadlines and the close still go through Go's poller.
//
// Why: every system call made the ordinary way wakes the runtime's monitor
// thread when the process was idle, and a woken monitor polls for a while.
// A relay serving short runs back to back goes idle between them, and
// each run's few ordinary calls (reading the request, writing it on,
// reading the answer's head) would wake it. socketConn makes a run's whole path
// raw: the producer's connections (dialer; the answer's body is read by
// descriptor in wire.Body's polled mode) and the consumers' (Listener, and
// consumerWriter for a connection served without it).
//
// Reads are serialized among themselves, and writes among themselves, as
// on any net.Conn; a read and a write may run at once.
type socketConn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu             sync.Mutex
	rbuf            []byte
	rn              int
	rerr            error
	readFn, writeFn func(fd uintptr) bool
	wmu             sync.Mutex
	wvec            [4][]byte // WriteVec's pieces, held here so that they do not escape
	wn              int
	werr            error
	writes          int // write system calls made (under wmu): what tests count
	// noWait makes Read answer errNoWait at once, without a system call
	// or the poller: sentMore's question to the server's reader of the
	// request, set and cleared by the one goroutine that reads then.
	noWait bool
	// head is the buffer the answers' heads are rendered into (respond),
	// one run at a time.
	head []byte
	// reqHead follows the head of the consumer's request being read, for a
	// bare LF (headscan.go); on only for accepted connections.
	reqHead headScan

	// hangup is the connection's registration with the hangup watcher
	// (processPoller.watch), kept from its first run to its close; 0 when none.
	hangup atomic.Int32

	// A kept connection's next stream, handed from the server's hijack
	// goroutine to the goroutine that served the request (handover.go).
	serving   bool                // the serving goroutine takes a stream answer over
	handsOver bool                // respond hands this request's stream over
	handoff   chan hijackedStream // made at the first handing
	closed    atomic.Bool         // Close was called
}

// errNoWait is a read of a socketConn told not to wait (noWait).
var errNoWait = errors.New("relay: read would wait")

// newSocketConn wraps c when it is a TCP connection on a platform with raw
// reads; otherwise it returns c.
func newSocketConn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok || !wire.CanPoll {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	s := &socketConn{TCPConn: tc, rc: rc}
	s.readFn, s.writeFn = s.readSome, s.writeSome
	return s
}

// Close ends the connection's hangup registration, if it has one, and
// closes it.
func (s *socketConn) Close() error {
	if token := s.hangup.Swap(0); token != 0 {
		processPoller.forget(token)
	}
	s.closed.Store(true)
	return s.TCPConn.Close()
}

func (s *socketConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.noWait {
		return 0, errNoWait
	}
	if s.reqHead.bad {
		return 0, errBareLF
	}
	s.rbuf, s.rn, s.rerr = p, 0, nil
	err := s.rc.Read(s.readFn) // waits for input and honours the read deadline
	n, rerr := s.rn, s.rerr
	s.rbuf = nil
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case rerr != nil:
		return 0, s.opError("read", os.NewSyscallError("read", rerr))
	case n == 0:
		return 0, io.EOF
	}
	if s.reqHead.on && s.reqHead.scan(p[:n]) {
		return 0, errBareLF // the request is refused: its bytes go unread
	}
	return n, nil
}

func (s *socketConn) readSome(fd uintptr) bool {
	n, err := wire.ReadFD(int(fd), s.rbuf)
	if err == syscall.EAGAIN {
		return false
	}
	s.rn, s.rerr = n, err
	return true
}

func (s *socketConn) Write(p []byte) (int, error) {
	return s.WriteVec(p, nil, nil, nil)
}

// WriteVec writes a, b, c and d in that order, raw, with one writev(2)
// per attempt (one write(2) for a single piece): the answer's head when it
// is still to go, a chunk's size line, its bytes from where they lie, its
// CRLF (and the body's end). It returns what Write would for their
// concatenation.
func (s *socketConn) WriteVec(a, b, c, d []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wvec, s.wn, s.werr = [4][]byte{a, b, c, d}, 0, nil
	err := s.rc.Write(s.writeFn) // waits for room and honours the write deadline
	n, werr := s.wn, s.werr
	s.wvec = [4][]byte{}
	switch {
	case err != nil:
		return n, s.opError("write", err)
	case werr != nil:
		return n, s.opError("write", os.NewSyscallError("write", werr))
	}
	return n, nil
}

func (s *socketConn) writeSome(fd uintptr) bool {
	total := len(s.wvec[0]) + len(s.wvec[1]) + len(s.wvec[2]) + len(s.wvec[3])
	for s.wn < total {
		n, err := wire.WritevFD(int(fd), &s.wvec, s.wn)
		s.writes++
		if err == syscall.EAGAIN {
			return false
		}
		if err != nil {
			s.werr = err
			return true
		}
		s.wn += n
	}
	return true
}

// opError reports err as net.Conn's Read and Write do: a *net.OpError
// naming the operation (RawConn's own say "raw-read", "raw-write").
func (s *socketConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
}

// rawConnOf returns conn's RawConn: the one a socketConn holds (asking its
// TCPConn would make another per call), else the connection's own.
func rawConnOf(conn net.Conn) (syscall.RawConn, error) {
	switch c := conn.(type) {
	case *socketConn:
		return c.rc, nil
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
		sc.reqHead.arm() // the first request's head comes first
	}
	return nc, nil
}
