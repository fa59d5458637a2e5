//go:build unix

package relay

import (
	"io"
	"net"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// socketPair returns both ends of a loopback TCP connection, each read and
// written with raw system calls.
func socketPair(t *testing.T) (a, b *socketConn) {
	t.Helper()
	x, y := testkit.TCPPair(t)
	a, ok1 := newSocketConn(x).(*socketConn)
	b, ok2 := newSocketConn(y).(*socketConn)
	if !ok1 || !ok2 {
		t.Fatal("a TCP connection was not wrapped")
	}
	return a, b
}

// The listener wraps what it accepts.
func TestListenerWrapsTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln)
	defer l.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			c.Write([]byte("hi")) //nolint:errcheck
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*socketConn); !ok {
		t.Fatalf("accepted a %T", c)
	}
	if got, _ := io.ReadAll(c); string(got) != "hi" {
		t.Fatalf("read %q", got)
	}
}

// The server's read of a request's first byte takes what has come of the
// request in the same read (readAhead), and the reads that follow are
// served from it, the buffer given back once they took it all; a read told
// not to wait (sentMore) still sees those bytes.
func TestReadAheadOfARequestsFirstByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln)
	defer l.Close()
	const req = "POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			c.Write([]byte(req + req)) //nolint:errcheck // a request and a pipelined one, in one segment
			io.Copy(io.Discard, c)     //nolint:errcheck // until the test closes
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := c.(*socketConn)
	var one [1]byte
	if n, err := sc.Read(one[:]); n != 1 || err != nil || one[0] != 'P' {
		t.Fatalf("first byte: %d %q %v", n, one[:n], err)
	}
	if sc.ahead == nil || sc.aheadN != 2*len(req) {
		t.Fatalf("read ahead %d bytes, want both requests' %d", sc.aheadN, 2*len(req))
	}
	rest := make([]byte, len(req)-1)
	if n, err := sc.Read(rest); string(rest[:n]) != req[1:] || err != nil {
		t.Fatalf("rest of the request: %q %v", rest[:n], err)
	}
	sc.noWait = true
	n, err := sc.Read(rest)
	sc.noWait = false
	if string(rest[:n]) != req[:len(rest)] || err != nil {
		t.Fatalf("a read that does not wait: %q %v, want the pipelined request's bytes", rest[:n], err)
	}
	if n, err := sc.Read(rest); string(rest[:n]) != req[len(rest):] || err != nil {
		t.Fatalf("the last byte: %q %v", rest[:n], err)
	}
	if sc.ahead != nil {
		t.Fatal("the buffer is held once its bytes were taken")
	}
}
