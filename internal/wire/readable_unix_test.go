//go:build unix

package wire

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// waitReadable waits until the socket fd has input (or its end), without
// reading it: it peeks through a duplicate of the descriptor, waiting in
// Go's poller, so that the descriptor's own reader is left as it was. It
// fails the test after liveness.
func waitReadable(t *testing.T, fd int) {
	t.Helper()
	dup, err := syscall.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "peek")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
	var one [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK)
		return err != syscall.EAGAIN
	}); err != nil {
		t.Fatalf("waiting for input: %v", err)
	}
}

// waitConnReadable is waitReadable for a connection's descriptor.
func waitConnReadable(t *testing.T, rc syscall.RawConn) {
	t.Helper()
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, fd)
}
