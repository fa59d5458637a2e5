package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

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
				case err == syscall.EAGAIN:
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
	case <-time.After(testkit.Liveness):
		t.Fatal("the data sent after a short read never woke the reader")
	}
}

// Drained says, inside a Poll step, that the read after a short one will
// answer syscall.EAGAIN without asking the kernel, and is false again once
// that read was made; outside a step it is false.
func TestDrainedAfterAShortPolledRead(t *testing.T) {
	peer, b := polledBody(t)
	peer.Write([]byte("one")) //nolint:errcheck
	waitConnReadable(t, b.raw)
	buf := make([]byte, 64)
	var seen []string
	_, err := b.Poll(func() bool {
		for len(seen) < 2 {
			before := b.Drained()
			n, err := b.Read(buf)
			seen = append(seen, fmt.Sprintf("%v:%q:%v:%v", before, buf[:n], err, b.Drained()))
		}
		return true
	})
	want := []string{`false:"one":<nil>:true`, `true:"":` + syscall.EAGAIN.Error() + `:false`}
	if err != nil || strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("reads %q, err %v; want %q", seen, err, want)
	}
	if b.Drained() {
		t.Error("drained outside a Poll step")
	}
}

// A new polled read (a stream woken after parking) asks the kernel
// first even when the last read of the previous one came back short: the
// data that arrived in between left no edge for the poller to report.
func TestPolledReadAfterAShortReadInAnEarlierPoll(t *testing.T) {
	peer, b := polledBody(t)
	buf := make([]byte, 64)
	readOne := func() (string, error) {
		got := ""
		_, err := b.Poll(func() bool {
			n, err := b.Read(buf)
			if err == syscall.EAGAIN {
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

// A body reads what the HTTP client buffered past the header first, then the
// connection, decoding the chunked framing across both; read to its end
// and closed, it gives the connection back for reuse, and the client's
// reader back once it is read.
func TestBodyReadsTheClientsBytesThenTheConnection(t *testing.T) {
	peer, c := net.Pipe()
	defer peer.Close()
	br := bufio.NewReader(strings.NewReader("5\r\nhel"))
	br.Peek(1) //nolint:errcheck // fills the reader, as the client's header read does
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

// Bytes after a complete response, in the read that ended it or left in the
// client's reader, are reported (Unsolicited) with their count before the
// connection is released, and it is released to be closed. A body closed
// before its end reports nothing: what is left is its own.
func TestBodyReportsBytesAfterTheResponse(t *testing.T) {
	const unsolicited = "HTTP/1.1 200 OK\r\n\r\n"
	for _, tc := range []struct {
		name, buffered string
		length         int
		want           int
	}{
		{"content-length, in the reader", "hello" + unsolicited, 5, len(unsolicited)},
		{"chunked, in the reader", "5\r\nhello\r\n0\r\n\r\n" + unsolicited, -1, len(unsolicited)},
		{"cut short", "hel", 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer, c := net.Pipe()
			defer peer.Close()
			br := bufio.NewReader(strings.NewReader(tc.buffered))
			br.Peek(1) //nolint:errcheck // fills the reader (all of it), as the client's header read does
			var events []string
			b := NewBody(c, tc.length, BodyOptions{Buffered: br, ReleaseReader: func(*bufio.Reader) {},
				Release:     func(reuse bool) { events = append(events, fmt.Sprintf("release %v", reuse)) },
				Unsolicited: func(n int) { events = append(events, fmt.Sprintf("unsolicited %d", n)) }, KeepAlive: true})
			buf := make([]byte, 8)
			if tc.want > 0 {
				// A Content-Length response followed by data is an overrun.
				if got, err := io.ReadAll(struct{ io.Reader }{b}); string(got) != "hello" || (err != nil && err != ErrOverrun) {
					t.Fatalf("read %q, %v", got, err)
				}
			} else if n, err := b.Read(buf); n != 3 || err != nil {
				t.Fatalf("read %d, %v", n, err)
			}
			b.CloseWithError(nil) //nolint:errcheck
			want := []string{"release false"}
			if tc.want > 0 {
				want = []string{fmt.Sprintf("unsolicited %d", tc.want), "release false"}
			}
			if strings.Join(events, ", ") != strings.Join(want, ", ") {
				t.Errorf("%q, want %q", events, want)
			}
		})
	}
}

// A body closed before its end releases its connection to be closed, not
// reused, and a read in flight (or after) returns ErrBodyClosed.
func TestBodyClosedMidResponseIsNotReused(t *testing.T) {
	peer, b := polledBody(t)
	released := make(chan bool, 1)
	b.release = func(reuse bool) { released <- reuse }
	b.keepAlive = true
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
	case <-time.After(testkit.Liveness):
		t.Fatal("the close did not wake the blocked read")
	}
	if <-released {
		t.Error("a body closed mid-response was released for reuse")
	}
}

// stuckConn is a consumer connection in memory: it takes every write,
// unless stuck, when a write blocks until its deadline and fails.
type stuckConn struct {
	net.Conn // nil: only the methods below are used
	deadline time.Time
	writes   int
	wrote    bytes.Buffer
	stuck    bool
}

func (c *stuckConn) SetWriteDeadline(t time.Time) error { c.deadline = t; return nil }
func (c *stuckConn) Write(p []byte) (int, error) {
	c.writes++
	if c.stuck {
		time.Sleep(time.Until(c.deadline)) // a write blocked on a full socket until its deadline
		return 0, timeoutError{}
	}
	return c.wrote.Write(p)
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// vecConn is a stuckConn that writes pieces in one call, as wire.Conn does
// with one writev(2).
type vecConn struct{ stuckConn }

func (c *vecConn) WriteVec(a, b, x, d []byte) (int, error) {
	c.writes++
	n := 0
	for _, p := range [][]byte{a, b, x, d} {
		m, _ := c.wrote.Write(p)
		n += m
	}
	return n, nil
}

func newChunkWriter(conn net.Conn, chunked bool, timeout time.Duration) *ChunkWriter {
	w := new(ChunkWriter)
	w.Init(conn, chunked, timeout)
	return w
}

// What is written between two flushes goes out as one chunk in one write;
// an event larger than the most the writer buffers goes out as a chunk of
// its own; End writes the last chunk.
func TestChunkWriterChunks(t *testing.T) {
	c := &stuckConn{}
	w := newChunkWriter(c, true, time.Minute)
	io.WriteString(w, "data: a\n\n")
	io.WriteString(w, "data: bc\n\n")
	if c.writes != 0 {
		t.Fatal("wrote before the flush")
	}
	if err := w.Flush(); err != nil || c.writes != 1 || c.wrote.String() != "13\r\ndata: a\n\ndata: bc\n\n\r\n" {
		t.Fatalf("%d writes %q, %v", c.writes, c.wrote.String(), err)
	}
	if err := w.Flush(); err != nil || c.writes != 1 || w.buf != nil {
		t.Fatalf("an empty flush wrote (%d writes, %v) or kept a buffer", c.writes, err)
	}
	c.wrote.Reset()
	big := strings.Repeat("x", maxPending+1)
	io.WriteString(w, "data: a\n\n")
	io.WriteString(w, big)
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	want := "9\r\ndata: a\n\n\r\n" + fmt.Sprintf("%x\r\n", len(big)) + big + "\r\n" + "0\r\n\r\n"
	if c.wrote.String() != want {
		t.Errorf("got %q…", c.wrote.String()[:min(40, c.wrote.Len())])
	}
}

// The header goes out with the first flush, in the same write as what is
// pending; held (HoldHeader), a first flush with only the header writes
// nothing, and the next one writes it. Header returns it until then.
func TestChunkWriterHeader(t *testing.T) {
	c := &vecConn{}
	w := newChunkWriter(c, true, time.Minute)
	w.SetHeader([]byte("HTTP/1.1 200 OK\r\n\r\n"))
	w.HoldHeader()
	if err := w.Flush(); err != nil || c.writes != 0 {
		t.Fatalf("a held header alone: %d writes, %v", c.writes, err)
	}
	if got := string(w.Header()); got != "HTTP/1.1 200 OK\r\n\r\n" {
		t.Fatalf("Header before it was written: %q", got)
	}
	io.WriteString(w, "data: a\n\n")
	if err := w.Flush(); err != nil || c.writes != 1 || c.wrote.String() != "HTTP/1.1 200 OK\r\n\r\n9\r\ndata: a\n\n\r\n" {
		t.Fatalf("%d writes %q, %v", c.writes, c.wrote.String(), err)
	}
	if w.Header() != nil {
		t.Fatalf("Header after it was written: %q", w.Header())
	}
	c2 := &vecConn{}
	w = newChunkWriter(c2, true, time.Minute)
	w.SetHeader([]byte("HTTP/1.1 200 OK\r\n\r\n"))
	if err := w.Flush(); err != nil || c2.wrote.String() != "HTTP/1.1 200 OK\r\n\r\n" {
		t.Fatalf("a header not held: wrote %q, %v", c2.wrote.String(), err)
	}
}

// A consumer that takes nothing for the write timeout is given up: the
// flush fails, and so does every write after it.
func TestChunkWriterGivesUpOnStuckConsumer(t *testing.T) {
	c := &stuckConn{stuck: true}
	w := newChunkWriter(c, true, 20*time.Millisecond)
	io.WriteString(w, "data: a\n\n")
	err := w.Flush()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || c.deadline.IsZero() || w.Err() != err {
		t.Fatalf("flush to a stuck consumer: %v (deadline %v, Err %v)", err, c.deadline, w.Err())
	}
	if _, err := io.WriteString(w, "data: b\n\n"); err == nil {
		t.Error("a write after the failure succeeded")
	}
	if err := w.End(); err == nil || w.buf != nil {
		t.Errorf("End after the failure: %v, buffer kept %v", err, w.buf != nil)
	}
}

// The write deadline moves forward with the writes, but not on every one.
func TestChunkWriterArmsDeadlineSparingly(t *testing.T) {
	c := &stuckConn{}
	w := newChunkWriter(c, false, time.Hour)
	io.WriteString(w, "a")
	w.Flush()
	first := c.deadline
	if time.Until(first) < 59*time.Minute {
		t.Fatalf("deadline %v", first)
	}
	io.WriteString(w, "b")
	w.Flush()
	if c.deadline != first {
		t.Error("the deadline moved on a write within an eighth of the timeout")
	}
	w.deadline = time.Now().Add(time.Hour / 2) // as if half the timeout had passed
	io.WriteString(w, "c")
	w.Flush()
	if time.Until(c.deadline) < 59*time.Minute || c.wrote.String() != "abc" {
		t.Errorf("deadline %v, wrote %q", c.deadline, c.wrote.String())
	}
}

// Without a timeout the writer sets no write deadline: a consumer may take
// as long as it likes.
func TestChunkWriterWithoutTimeoutSetsNoDeadline(t *testing.T) {
	for _, timeout := range []time.Duration{0, -1} {
		c := &stuckConn{}
		w := newChunkWriter(c, false, timeout)
		io.WriteString(w, "a")
		if err := w.Flush(); err != nil || !c.deadline.IsZero() || c.wrote.String() != "a" {
			t.Errorf("timeout %v: deadline %v, wrote %q, %v", timeout, c.deadline, c.wrote.String(), err)
		}
	}
}

// gateConn is a connection whose Write waits until it is let go, telling
// entered when it starts to wait: a write in flight for as long as a test
// needs.
type gateConn struct {
	stuckConn
	entered, release chan struct{}
}

func (c *gateConn) Write(p []byte) (int, error) {
	c.entered <- struct{}{}
	<-c.release
	return c.stuckConn.Write(p)
}

// WriteSeq is odd while a write is in flight, and has moved on by two once
// it has returned, whether it failed or not.
func TestChunkWriterWriteSeq(t *testing.T) {
	c := &gateConn{entered: make(chan struct{}), release: make(chan struct{})}
	w := newChunkWriter(c, false, time.Minute)
	if s := w.WriteSeq(); s != 0 {
		t.Fatalf("WriteSeq %d before any write", s)
	}
	io.WriteString(w, "a")
	done := make(chan error)
	go func() { done <- w.Flush() }()
	<-c.entered
	if s := w.WriteSeq(); s != 1 {
		t.Errorf("WriteSeq %d while a write is in flight, want 1", s)
	}
	close(c.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := w.WriteSeq(); s != 2 {
		t.Errorf("WriteSeq %d after the write, want 2", s)
	}
	c.stuck, c.deadline = true, time.Now() // the next write fails at once
	io.WriteString(w, "b")
	go func() { <-c.entered }()
	if err := w.Flush(); err == nil {
		t.Fatal("the stuck write succeeded")
	}
	if s := w.WriteSeq(); s != 4 {
		t.Errorf("WriteSeq %d after a failed write, want 4", s)
	}
}

// readChunks reads a chunked body to its end and returns each chunk's
// bytes, checking the framing, and that net/http's chunked reader reads
// the same body.
func readChunks(raw []byte) ([]string, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	var chunks []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("chunk size line: %v (read %q)", err, raw)
		}
		var n int
		if _, err := fmt.Sscanf(line, "%x\r\n", &n); err != nil {
			return nil, fmt.Errorf("chunk size line %q: %v", line, err)
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(br, data); err != nil || string(data[n:]) != "\r\n" {
			return nil, fmt.Errorf("chunk of %d: %q, %v", n, data, err)
		}
		if n == 0 {
			break
		}
		chunks = append(chunks, string(data[:n]))
	}
	body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw)))
	if err != nil || string(body) != strings.Join(chunks, "") {
		return nil, fmt.Errorf("net/http reads %q, %v; chunks %q", body, err, chunks)
	}
	return chunks, nil
}

// Frames written borrowed that lie end to end go out together from where
// they are; bytes written after them, copied or borrowed from elsewhere,
// follow them in order; a flush is one chunk, in one write. On a
// connection that cannot write pieces at once they are copied, and go out
// the same.
func TestChunkWriterBorrowedFramesKeepTheirOrder(t *testing.T) {
	for _, vec := range []bool{true, false} {
		c := &vecConn{}
		var conn net.Conn = c
		if !vec {
			conn = &c.stuckConn
		}
		w := newChunkWriter(conn, true, time.Minute)
		buf := []byte("data: a\n\ndata: b\n\ndata: c\n\n")
		a, b, x := buf[:9], buf[9:18], buf[18:27]
		for _, p := range [][]byte{a, b} {
			if err := w.WriteBorrowed(p); err != nil {
				t.Fatal(err)
			}
		}
		if vec && len(w.span) != len(a)+len(b) {
			t.Fatalf("two frames end to end held as %d bytes, want %d", len(w.span), len(a)+len(b))
		}
		w.Write([]byte(": copied\n\n")) //nolint:errcheck // checked by the flush
		if err := w.WriteBorrowed(x); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, p := range [][]byte{x, a} { // borrowed, but not end to end
			if err := w.WriteBorrowed(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteBorrowed(b); err != nil { // held when the body ends
			t.Fatal(err)
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		chunks, err := readChunks(c.wrote.Bytes())
		want := []string{"data: a\n\ndata: b\n\n: copied\n\ndata: c\n\n", "data: c\n\ndata: a\n\n", "data: b\n\n"}
		if err != nil || fmt.Sprint(chunks) != fmt.Sprint(want) {
			t.Fatalf("vec %v: chunks %q, %v; want %q", vec, chunks, err, want)
		}
		if vec && c.writes != 3 {
			t.Errorf("%d writes for three flushes", c.writes)
		}
	}
}

// A burst of frames end to end larger than the most a writer buffers goes
// out in chunks no larger than that, whole and in order.
func TestChunkWriterBorrowedBurstIsCut(t *testing.T) {
	c := &vecConn{}
	w := newChunkWriter(c, true, time.Minute)
	var burst []byte
	var frames [][2]int
	for i := 0; len(burst) < 3*maxPending; i++ {
		start := len(burst)
		burst = fmt.Appendf(burst, "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"%d %s\"}\n\n", i, strings.Repeat("x", i%300))
		frames = append(frames, [2]int{start, len(burst)})
	}
	for _, f := range frames {
		if err := w.WriteBorrowed(burst[f[0]:f[1]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	chunks, err := readChunks(c.wrote.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if len(c) > maxPending {
			t.Fatalf("a chunk of %d bytes, over %d", len(c), maxPending)
		}
	}
	if strings.Join(chunks, "") != string(burst) {
		t.Fatal("the chunks do not add up to the burst")
	}
	if len(chunks) > 4 {
		t.Fatalf("%d chunks for %d bytes end to end", len(chunks), len(burst))
	}
}
