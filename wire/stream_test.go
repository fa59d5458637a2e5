package wire

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// liveness bounds a wait for something that must happen.
const liveness = 10 * time.Second

// polledBody returns a close-delimited body read in polled mode from one
// end of a loopback TCP connection, and the other end to write to.
func polledBody(t *testing.T) (peer net.Conn, b *Body) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return peer, NewBody(c, -2, BodyOptions{Raw: raw, Release: func(bool) {}})
}

// A polled read that came back short does not ask the kernel again: it
// waits for the poller. Data that arrives in between must still wake it
// (the poller is edge-triggered; the readiness it records is kept inside
// one RawConn read).
func TestPolledReadWakesForDataAfterAShortRead(t *testing.T) {
	peer, b := polledBody(t)
	peer.Write([]byte("one")) //nolint:errcheck
	var got []string
	wouldBlock := 0
	buf := make([]byte, 64)
	done := make(chan error, 1)
	go func() {
		_, err := b.Poll(func() bool {
			for {
				n, err := b.Read(buf)
				switch {
				case err == ErrWouldBlock:
					wouldBlock++
					return false
				case err != nil:
					return true
				}
				got = append(got, string(buf[:n]))
				if len(got) == 1 {
					// More arrives after the short read, before the wait.
					peer.Write([]byte("two")) //nolint:errcheck
					waitReadable(t, b.fd)
				}
				if len(got) == 2 {
					return true
				}
			}
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || strings.Join(got, "|") != "one|two" || wouldBlock == 0 {
			t.Errorf("reads %q, %d would-blocks, err %v", got, wouldBlock, err)
		}
	case <-time.After(liveness):
		t.Fatal("the data sent after a short read never woke the reader")
	}
}

// A new polled read (a stream taken up again after parking) asks the kernel
// first even when the last read of the previous one came back short: the
// data that arrived in between left no edge for the poller to report.
func TestPolledReadAfterAShortReadInAnEarlierPoll(t *testing.T) {
	peer, b := polledBody(t)
	buf := make([]byte, 64)
	readOne := func() (string, error) {
		got := ""
		_, err := b.Poll(func() bool {
			n, err := b.Read(buf)
			if err == ErrWouldBlock {
				return false
			}
			got = string(buf[:n])
			return true
		})
		return got, err
	}
	peer.Write([]byte("one")) //nolint:errcheck
	if got, err := readOne(); got != "one" || err != nil {
		t.Fatalf("first poll: %q, %v", got, err)
	}
	peer.Write([]byte("two"))                               //nolint:errcheck
	waitConnReadable(t, b.raw)                              // arrived before the next poll starts
	b.conn.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
	if got, err := readOne(); got != "two" || err != nil {
		t.Fatalf("second poll: %q, %v (the waiting data was not read)", got, err)
	}
}

// A body reads what the HTTP client buffered past the head first, then the
// connection, decoding the chunked framing across both; read to its end
// and closed, it gives the connection back for reuse, and the client's
// reader back once it is read.
func TestBodyReadsTheClientsBytesThenTheConnection(t *testing.T) {
	peer, c := net.Pipe()
	defer peer.Close()
	br := bufio.NewReader(strings.NewReader("5\r\nhel"))
	br.Peek(1) //nolint:errcheck // fills the reader, as the client's head read does
	var readerBack bool
	reused := make(chan bool, 1)
	b := NewBody(c, -1, BodyOptions{Buffered: br, ReleaseReader: func(r *bufio.Reader) { readerBack = r == br },
		Release: func(reuse bool) { reused <- reuse }, KeepAlive: true})
	go peer.Write([]byte("lo\r\n0\r\n\r\n")) //nolint:errcheck
	got, err := io.ReadAll(b)
	if string(got) != "hello" || err != nil || !readerBack {
		t.Fatalf("read %q, %v; reader given back %v", got, err, readerBack)
	}
	b.CloseWithError(nil) //nolint:errcheck
	if !<-reused {
		t.Error("a body read to its end was not released for reuse")
	}
	if n, err := b.Read(make([]byte, 8)); n != 0 || err != ErrBodyClosed {
		t.Errorf("a read after the close: %d, %v", n, err)
	}
}

// A body closed before its end releases its connection to be closed, not
// reused, and a read in flight (or after) returns ErrBodyClosed.
func TestBodyClosedMidAnswerIsNotReused(t *testing.T) {
	peer, b := polledBody(t)
	released := make(chan bool, 1)
	b.opts.Release = func(reuse bool) { released <- reuse }
	b.opts.KeepAlive = true
	peer.Write([]byte("half")) //nolint:errcheck
	reading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		if n, err := b.Read(buf); n != 4 || err != nil {
			done <- err
			return
		}
		close(reading)
		_, err := b.Read(buf) // blocks: nothing more comes
		done <- err
	}()
	select {
	case <-reading:
	case err := <-done:
		t.Fatalf("the first read: %v", err)
	}
	b.CloseWithError(nil) //nolint:errcheck // from another goroutine, as a cancel does
	select {
	case err := <-done:
		if err != ErrBodyClosed {
			t.Errorf("the interrupted read returned %v, want ErrBodyClosed", err)
		}
	case <-time.After(liveness):
		t.Fatal("the close did not wake the blocked read")
	}
	if <-released {
		t.Error("a body closed mid-answer was released for reuse")
	}
}
