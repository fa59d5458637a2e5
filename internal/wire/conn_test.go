//go:build unix

package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// connPair returns both ends of a loopback TCP connection, each read and
// written with raw system calls, closed when the test ends.
func connPair(t *testing.T) (a, b *Conn) {
	t.Helper()
	x, y := testkit.TCPPair(t)
	a, b = &Conn{}, &Conn{}
	if err := a.Init(x); err != nil {
		t.Fatal(err)
	}
	if err := b.Init(y); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// waitedForRoom makes s report, by closing the channel it returns, the
// first time one of its writes finds the socket's buffer full and waits for
// room.
func waitedForRoom(s *Conn) <-chan struct{} {
	full := make(chan struct{})
	var once sync.Once
	s.CountWrites()
	s.probe.waited = func() { once.Do(func() { close(full) }) }
	return full
}

// awaitFull waits until full is closed: a write waited for room. It gives up
// with an error after liveness, so that a reader it holds back still reads
// what the writer wrote.
func awaitFull(t *testing.T, full <-chan struct{}) {
	select {
	case <-full:
	case <-time.After(testkit.Liveness):
		t.Error("no write waited for room")
	}
}

// What one end writes the other reads, whole and in order, also when the
// reader is slower than the writer (writes wait for room, reads for input).
func TestConnCarriesEverything(t *testing.T) {
	a, b := connPair(t)
	a.SetWriteBuffer(32 << 10) //nolint:errcheck
	b.SetReadBuffer(32 << 10)  //nolint:errcheck
	want := bytes.Repeat([]byte("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"x\"}\n\n"), 40000)
	got := readSlowly(t, a, b, len(want))
	var err error
	for rest := want; len(rest) > 0 && err == nil; {
		n := min(len(rest), 5000)
		var w int
		if w, err = a.Write(rest[:n]); err == nil && w != n {
			err = fmt.Errorf("wrote %d of %d", w, n)
		}
		rest = rest[n:]
	}
	a.CloseWrite() //nolint:errcheck // the reader's EOF
	if g := <-got; err != nil || !bytes.Equal(g, want) {
		t.Fatalf("read %d bytes, want %d (write: %v)", len(g), len(want), err)
	}
}

// readSlowly reads b, once a write on a has waited for room, until EOF or
// more than want bytes, and sends what it read. Both ends' deadlines are
// Liveness away, and the reader closes b when it has read too much, so a
// writer that loses its place fails the test instead of writing on.
func readSlowly(t *testing.T, a, b *Conn, want int) <-chan []byte {
	a.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
	b.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
	full := waitedForRoom(a)
	got := make(chan []byte, 1)
	go func() {
		awaitFull(t, full) // the buffers fill first
		var buf bytes.Buffer
		p := make([]byte, 777)
		for buf.Len() <= want {
			n, err := b.Read(p)
			buf.Write(p[:n])
			if err != nil {
				if err != io.EOF {
					t.Errorf("read: %v", err)
				}
				break
			}
		}
		if buf.Len() > want {
			b.Close() // the writer's next write fails
		}
		got <- buf.Bytes()
	}()
	return got
}

// WriteVec writes its four pieces whole and in order, also when the
// socket's buffer fills in the middle of one (a write waits for room and
// goes on where the last one stopped).
func TestConnWriteVecResumes(t *testing.T) {
	a, b := connPair(t)
	a.SetWriteBuffer(32 << 10) //nolint:errcheck
	b.SetReadBuffer(32 << 10)  //nolint:errcheck
	header, size, body, tail := []byte("HTTP/1.1 200 OK\r\n\r\n"), []byte("5dc0\r\n"), bytes.Repeat([]byte("0123456789abcdef"), 1<<16), []byte("\r\n")
	want := bytes.Repeat(append(append(append(append([]byte{}, header...), size...), body...), tail...), 3)
	got := readSlowly(t, a, b, len(want))
	var err error
	for i := 0; i < 3 && err == nil; i++ {
		var n int
		if n, err = a.WriteVec(header, size, body, tail); err == nil && n != len(header)+len(size)+len(body)+len(tail) {
			err = fmt.Errorf("wrote %d", n)
		}
	}
	a.CloseWrite() //nolint:errcheck // the reader's EOF
	if g := <-got; err != nil || !bytes.Equal(g, want) {
		t.Fatalf("read %d bytes, want %d (write: %v)", len(g), len(want), err)
	}
}

// Deadlines, the peer's reset and a local close are reported as a
// net.Conn reports them.
func TestConnErrors(t *testing.T) {
	a, b := connPair(t)
	a.SetReadDeadline(time.Now().Add(10 * time.Millisecond)) //nolint:errcheck
	_, err := a.Read(make([]byte, 10))
	var ne net.Error
	var op *net.OpError
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.As(err, &op) || op.Op != "read" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %#v", err)
	}
	a.SetReadDeadline(time.Time{}) //nolint:errcheck

	b.SetLinger(0) //nolint:errcheck // close with a reset
	b.Close()
	for i := 0; i < 100 && err == nil || i == 0; i++ {
		_, err = a.Write([]byte("after the reset"))
		time.Sleep(time.Millisecond)
	}
	if !errors.As(err, &op) || op.Op != "write" || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Fatalf("write to a reset connection: %#v", err)
	}

	a.Close()
	if _, err := a.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// The peer's orderly close is io.EOF, and a read into nothing reads nothing.
func TestConnEOF(t *testing.T) {
	a, b := connPair(t)
	if n, err := a.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
	b.Write([]byte("last")) //nolint:errcheck
	b.Close()
	got, err := io.ReadAll(a)
	if string(got) != "last" || err != nil {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := a.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the end: %v", err)
	}
}

// Unsolicited reads what arrived on a connection owed nothing, without
// waiting: nothing on an idle one, the bytes (counted) when the peer sent some, and
// io.EOF once the peer closed it.
func TestConnUnsolicited(t *testing.T) {
	a, b := connPair(t)
	if n, err := b.Unsolicited(); n != 0 || err != nil {
		t.Fatalf("idle connection: %d, %v; want 0, nil", n, err)
	}
	unsolicited := bytes.Repeat([]byte("HTTP/1.1 200 OK\r\n"), 100) // past Unsolicited's buffer
	if _, err := a.Write(unsolicited); err != nil {
		t.Fatal(err)
	}
	waitConnReadable(t, b.RawConn()) // one segment on loopback: all of it
	if n, err := b.Unsolicited(); n != len(unsolicited) || err != nil {
		t.Fatalf("after %d unsolicited bytes: %d, %v", len(unsolicited), n, err)
	}
	if n, err := b.Unsolicited(); n != 0 || err != nil {
		t.Fatalf("once read: %d, %v; want 0, nil", n, err)
	}
	a.CloseWrite() //nolint:errcheck
	waitConnReadable(t, b.RawConn())
	if n, err := b.Unsolicited(); n != 0 || err != io.EOF {
		t.Fatalf("closed by the peer: %d, %v; want 0, io.EOF", n, err)
	}
}
