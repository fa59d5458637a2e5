//go:build unix

package relay

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// On a TCP socket the writer writes by descriptor; what it writes arrives
// whole and in order to a consumer reading at its own pace (a write that
// finds the socket's buffer full waits for room and goes on: wire.Conn's,
// tested in wire).
func TestConsumerWriterByDescriptorDeliversEverything(t *testing.T) {
	relaySide, consumerSide := testkit.TCPPair(t)
	relaySide.SetWriteBuffer(64 << 10)   //nolint:errcheck
	consumerSide.SetReadBuffer(64 << 10) //nolint:errcheck
	w := newConsumerWriter(relaySide, false, time.Minute)
	if _, ok := w.Conn().(*socketConn); !ok {
		t.Fatal("a TCP connection is not written by descriptor")
	}
	var want bytes.Buffer
	for i := 0; want.Len() < 2<<20; i++ {
		want.WriteString("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"" + strings.Repeat("x", i%300) + "\"}\n\n")
	}
	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 1000)
		for b.Len() < want.Len() {
			n, err := consumerSide.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	rest := want.Bytes()
	for len(rest) > 0 {
		n := min(len(rest), 3000)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("received %d bytes, want %d (equal prefix %d)", len(b), want.Len(), commonPrefix(b, want.Bytes()))
	}
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// A consumer that reads nothing is given up at the write deadline on the
// descriptor path too.
func TestConsumerWriterByDescriptorGivesUpOnStuckConsumer(t *testing.T) {
	relaySide, _ := testkit.TCPPair(t)
	w := newConsumerWriter(relaySide, true, 50*time.Millisecond)
	if _, ok := w.Conn().(*socketConn); !ok {
		t.Fatal("a TCP connection is not written by descriptor")
	}
	chunk := strings.Repeat("x", 16<<10)
	var err error
	for i := 0; i < 4096 && err == nil; i++ { // at most 64 MiB: far past any socket buffer
		io.WriteString(w, chunk)
		err = w.Flush()
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("flush to a consumer that reads nothing: %v", err)
	}
	if err := w.End(); err == nil {
		t.Error("End after the failure succeeded")
	}
}

// A consumer gone (reset) fails the write with the socket's error, as
// conn.Write reports it.
func TestConsumerWriterByDescriptorReportsReset(t *testing.T) {
	relaySide, consumerSide := testkit.TCPPair(t)
	w := newConsumerWriter(relaySide, false, time.Minute)
	if _, ok := w.Conn().(*socketConn); !ok {
		t.Fatal("a TCP connection is not written by descriptor")
	}
	consumerSide.SetLinger(0) //nolint:errcheck // close with a reset
	consumerSide.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		io.WriteString(w, testkit.ContentEvent)
		err = w.Flush()
		time.Sleep(time.Millisecond)
	}
	var op *net.OpError
	var se *os.SyscallError
	if !errors.As(err, &op) || op.Op != "write" || !errors.As(err, &se) ||
		!(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Fatalf("write to a reset connection: %#v", err)
	}
}
