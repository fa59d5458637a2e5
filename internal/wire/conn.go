package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Conn is a TCP connection whose Read and Write make their system calls
// raw (ReadFD, WritevFD) inside the connection's RawConn calls: the
// waiting, the deadlines and the close still go through Go's poller.
//
// Why: every system call made the ordinary way wakes the runtime's monitor
// thread when the process was idle, and a woken monitor polls for a while.
// A relay serving short runs back to back goes idle between them, and
// each run's few ordinary calls would wake it.
//
// Reads are serialized among themselves, and writes among themselves, as
// on any net.Conn; a read and a write may run at once. A Conn is used in
// place (Init): it is not copied.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu             sync.Mutex
	rbuf            []byte
	rn              int
	rerr            error
	readFn, writeFn func(fd uintptr) bool
	unsolicitedFn   func(fd uintptr) // Unsolicited's read, made once as readFn
	wmu             sync.Mutex
	wvec            [4][]byte // WriteVec's pieces, held here so that they do not escape
	wn              int
	werr            error
	armer           writeArmer  // writeVecArmed's, for the call
	wwait           int         // wn at the call's last wait for room
	probe           *writeProbe // a test's watch of the writes (CountWrites); nil otherwise
}

// writeProbe is what a test watches of a Conn's writes, under wmu.
type writeProbe struct {
	writes int    // write system calls made
	waited func() // when set, called each time a write waits for room
}

// ErrNoRawConn is a connection that cannot be read and written raw: not
// TCP, or on a platform without raw reads (CanPoll false).
var ErrNoRawConn = errors.New("wire: the connection cannot be read and written raw")

// Init makes c the raw connection over tc. It fails with ErrNoRawConn, or
// SyscallConn's error, when tc cannot be read raw; c is then unusable.
func (c *Conn) Init(tc *net.TCPConn) error {
	if !CanPoll {
		return ErrNoRawConn
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	c.TCPConn, c.rc = tc, rc
	c.readFn, c.writeFn = c.readSome, c.writeSome // made once: a read or write allocates nothing
	c.unsolicitedFn = c.readUnsolicited
	return nil
}

// RawConn returns the connection's RawConn (asking the TCPConn would make
// another per call).
func (c *Conn) RawConn() syscall.RawConn { return c.rc }

// CountWrites has c count its write system calls from now on (Writes).
// It is for tests, the relay's among them, which an export_test.go of
// wire's cannot serve: a Conn that no test watches counts nothing.
func (c *Conn) CountWrites() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.probe == nil {
		c.probe = &writeProbe{}
	}
}

// Writes reports the write system calls made since CountWrites: how many
// pieces a response went out in.
func (c *Conn) Writes() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.probe == nil {
		return 0
	}
	return c.probe.writes
}

// Read reads as net.Conn's Read does: it waits for input and honours the
// read deadline; the peer's orderly close is io.EOF.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf, c.rn, c.rerr = p, 0, nil
	err := c.rc.Read(c.readFn)
	n, rerr := c.rn, c.rerr
	c.rbuf = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case rerr != nil:
		return 0, c.opError("read", os.NewSyscallError("read", rerr))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) readSome(fd uintptr) bool {
	n, err := ReadFD(int(fd), c.rbuf)
	if err == syscall.EAGAIN {
		return false
	}
	c.rn, c.rerr = n, err
	return true
}

// maxUnsolicited bounds what Unsolicited reads: enough to say how much arrived, not
// a way for a peer to keep the caller reading.
const maxUnsolicited = 64 << 10

// Unsolicited reads, without waiting, whatever has arrived on a connection that
// is owed nothing: a client's connection between a response and its next
// request, where any byte is one the peer sent outside a response. It
// returns how many bytes it read (at most 64 KiB: the rest stays unread)
// and io.EOF when the peer closed the connection (or another error when
// it reset it); 0, nil when nothing has arrived. The bytes are dropped:
// a connection that had any is not to be used again.
func (c *Conn) Unsolicited() (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rn, c.rerr = 0, nil
	if err := c.rc.Control(c.unsolicitedFn); err != nil {
		return 0, c.opError("read", err)
	}
	n, err := c.rn, c.rerr
	if err != nil && err != io.EOF {
		err = c.opError("read", os.NewSyscallError("read", err))
	}
	return n, err
}

func (c *Conn) readUnsolicited(fd uintptr) {
	var buf [512]byte
	for c.rn < maxUnsolicited {
		n, err := ReadFD(int(fd), buf[:])
		switch {
		case err == syscall.EAGAIN:
			return
		case err != nil:
			c.rerr = err
			return
		case n == 0:
			c.rerr = io.EOF
			return
		}
		c.rn += n
	}
}

func (c *Conn) Write(p []byte) (int, error) {
	return c.WriteVec(p, nil, nil, nil)
}

// WriteVec writes a, b, x and d in that order, raw, with one writev(2)
// per attempt (one write(2) for a single piece): the response header when it
// is still to go, a chunk's size line, its bytes from where they lie, its
// CRLF (and the body's end). It waits for room and honours the write
// deadline, and returns what Write would for their concatenation. The
// pieces are borrowed for the call only.
func (c *Conn) WriteVec(a, b, x, d []byte) (int, error) {
	return c.writeVecArmed(nil, a, b, x, d)
}

// writeArmer moves a write deadline that bounds the time without progress
// (ChunkWriter's stall limit).
type writeArmer interface{ rearm() }

// stallWriter is a VecWriter whose long writes keep a stall limit: Conn.
type stallWriter interface {
	writeVecArmed(armer writeArmer, a, b, x, d []byte) (int, error)
}

// writeVecArmed is WriteVec that, when armer is set, calls armer.rearm
// each time the write is about to wait for room after bytes went out since
// its last wait: the write deadline then bounds the time the peer takes
// no byte, not the whole write. A write that goes out at once (the usual
// small chunk) never calls it.
func (c *Conn) writeVecArmed(armer writeArmer, a, b, x, d []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wvec, c.wn, c.werr = [4][]byte{a, b, x, d}, 0, nil
	c.armer, c.wwait = armer, 0
	err := c.rc.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wvec, c.armer = [4][]byte{}, nil
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case werr != nil:
		return n, c.opError("write", os.NewSyscallError("write", werr))
	}
	return n, nil
}

func (c *Conn) writeSome(fd uintptr) bool {
	total := len(c.wvec[0]) + len(c.wvec[1]) + len(c.wvec[2]) + len(c.wvec[3])
	for c.wn < total {
		n, err := WritevFD(int(fd), &c.wvec, c.wn)
		if c.probe != nil {
			c.probe.writes++
		}
		if err == syscall.EAGAIN {
			if c.probe != nil && c.probe.waited != nil {
				c.probe.waited()
			}
			if c.armer != nil && c.wn > c.wwait {
				// The deadline moves before the wait: the runtime's poller
				// waits until the one set last.
				c.wwait = c.wn
				c.armer.rearm()
			}
			return false
		}
		if err != nil {
			c.werr = err
			return true
		}
		c.wn += n
	}
	return true
}

// opError reports err as net.Conn's Read and Write do: a *net.OpError
// naming the operation (RawConn's own say "raw-read", "raw-write").
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
