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
