package relay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http/httputil"
	"strings"
	"testing"
	"time"
)

// readChunks reads a chunked body from r to its end and returns each
// chunk's bytes, checking the framing, and that net/http's chunked reader
// reads the same body.
func readChunks(r io.Reader) ([]string, error) {
	var raw bytes.Buffer
	br := bufio.NewReader(io.TeeReader(r, &raw))
	var chunks []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("chunk size line: %v (read %q)", err, raw.String())
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
	body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw.Bytes())))
	if err != nil || string(body) != strings.Join(chunks, "") {
		return nil, fmt.Errorf("net/http reads %q, %v; chunks %q", body, err, chunks)
	}
	return chunks, nil
}

// chunksOf reads the chunks of conn's body in a goroutine; wait returns them.
func chunksOf(t *testing.T, conn io.Reader) (wait func() []string) {
	type result struct {
		chunks []string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		c, err := readChunks(conn)
		done <- result{c, err}
	}()
	return func() []string {
		t.Helper()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.chunks
	}
}

// Frames written borrowed that lie end to end go out together from where
// they are; bytes written after them, copied or borrowed from elsewhere,
// follow them in order; a flush is one chunk.
func TestConsumerWriterBorrowedFramesKeepTheirOrder(t *testing.T) {
	relaySide, consumerSide := tcpPair(t)
	cw := newConsumerWriter(relaySide, true, time.Minute)
	buf := []byte("data: a\n\ndata: b\n\ndata: c\n\n")
	a, b, c := buf[:9], buf[9:18], buf[18:27]
	got := chunksOf(t, consumerSide)
	for _, p := range [][]byte{a, b} {
		if err := cw.WriteBorrowed(p); err != nil {
			t.Fatal(err)
		}
	}
	if cw.vec != nil && len(cw.span) != len(a)+len(b) {
		t.Fatalf("two frames end to end held as %d bytes, want %d", len(cw.span), len(a)+len(b))
	}
	cw.Write([]byte(": copied\n\n")) //nolint:errcheck // checked by the flush
	if err := cw.WriteBorrowed(c); err != nil {
		t.Fatal(err)
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{c, a} { // borrowed, but not end to end
		if err := cw.WriteBorrowed(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := cw.WriteBorrowed(b); err != nil { // held when the body ends
		t.Fatal(err)
	}
	if err := cw.End(); err != nil {
		t.Fatal(err)
	}
	want := []string{"data: a\n\ndata: b\n\n: copied\n\ndata: c\n\n", "data: c\n\ndata: a\n\n", "data: b\n\n"}
	if chunks := got(); fmt.Sprint(chunks) != fmt.Sprint(want) {
		t.Fatalf("chunks %q, want %q", chunks, want)
	}
}

// A burst of frames end to end larger than the most a writer buffers goes
// out in chunks no larger than that, whole and in order.
func TestConsumerWriterBorrowedBurstIsCut(t *testing.T) {
	relaySide, consumerSide := tcpPair(t)
	cw := newConsumerWriter(relaySide, true, time.Minute)
	var burst []byte
	var frames [][2]int
	for i := 0; len(burst) < 3*maxPending; i++ {
		start := len(burst)
		burst = fmt.Appendf(burst, "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"%d %s\"}\n\n", i, strings.Repeat("x", i%300))
		frames = append(frames, [2]int{start, len(burst)})
	}
	got := chunksOf(t, consumerSide)
	for _, f := range frames {
		if err := cw.WriteBorrowed(burst[f[0]:f[1]]); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.End(); err != nil {
		t.Fatal(err)
	}
	chunks := got()
	for _, c := range chunks {
		if len(c) > maxPending {
			t.Fatalf("a chunk of %d bytes, over %d", len(c), maxPending)
		}
	}
	if strings.Join(chunks, "") != string(burst) {
		t.Fatal("the chunks do not add up to the burst")
	}
	if cw.vec != nil && len(chunks) > 4 {
		t.Fatalf("%d chunks for %d bytes end to end", len(chunks), len(burst))
	}
}
