//go:build unix

package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// stallConns returns, for each way a ChunkWriter writes, the writer's end
// of a loopback TCP connection with small buffers and the reader's: a Conn
// (raw writes, the deadline moved as bytes go out) and a plain net.Conn
// (no raw writes: the write goes on after its deadline while bytes went).
func stallConns(t *testing.T) map[string]func(t *testing.T) (w net.Conn, r net.Conn) {
	small := func(w, r *net.TCPConn) {
		w.SetWriteBuffer(32 << 10) //nolint:errcheck
		r.SetReadBuffer(32 << 10)  //nolint:errcheck
	}
	return map[string]func(t *testing.T) (net.Conn, net.Conn){
		"Conn": func(t *testing.T) (net.Conn, net.Conn) {
			x, y := testkit.TCPPair(t)
			small(x, y)
			c := &Conn{}
			if err := c.Init(x); err != nil {
				t.Fatal(err)
			}
			return c, y
		},
		"net.Conn": func(t *testing.T) (net.Conn, net.Conn) {
			x, y := testkit.TCPPair(t)
			small(x, y)
			return struct{ net.Conn }{x}, y // no WriteVec
		},
	}
}

// readPaced reads r, at most 16 KiB every 5 ms, until it has read stop
// bytes (all, when stop is 0), and returns what it read. The wait paces
// the reads; it synchronises nothing.
func readPaced(r io.Reader, stop int) []byte {
	var got bytes.Buffer
	p := make([]byte, 16<<10)
	for stop == 0 || got.Len() < stop {
		time.Sleep(5 * time.Millisecond)
		n, err := r.Read(p)
		got.Write(p[:n])
		if err != nil {
			break
		}
	}
	return got.Bytes()
}

// writeLargeChunk writes a 2 MiB chunk, and the body's end, to a writer
// with a 200 ms stall limit on each of stallConns, while a paced reader
// (readPaced) reads it up to stop bytes, and has check judge the write's
// error, the writer and what the reader read.
func writeLargeChunk(t *testing.T, stop int, check func(t *testing.T, w *ChunkWriter, werr error, event, read []byte)) {
	for name, pair := range stallConns(t) {
		t.Run(name, func(t *testing.T) {
			wc, rc := pair(t)
			w := newChunkWriter(wc, false, 200*time.Millisecond)
			event := bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16)
			read := make(chan []byte, 1)
			go func() { read <- readPaced(rc, stop) }()
			_, err := w.Write(event)
			if err == nil {
				err = w.End()
			}
			wc.Close()
			check(t, w, err, event, <-read)
		})
	}
}

// A consumer that reads steadily, each read well within the stall limit,
// takes a chunk far larger than the sockets' buffers whole, though the
// write lasts several times the limit: the limit counts from the last byte
// taken, not from the start of the write.
func TestChunkWriterStallLimitCountsFromTheLastByte(t *testing.T) {
	writeLargeChunk(t, 0, func(t *testing.T, w *ChunkWriter, err error, event, read []byte) {
		if err != nil || !bytes.Equal(read, event) {
			t.Errorf("write: %v; read %d bytes, want %d", err, len(read), len(event))
		}
	})
}

// A consumer that reads part of a large chunk and then stops is still cut:
// the write fails with os.ErrDeadlineExceeded, and so does the writer.
func TestChunkWriterCutsAConsumerThatStops(t *testing.T) {
	writeLargeChunk(t, 256<<10, func(t *testing.T, w *ChunkWriter, err error, event, read []byte) {
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(w.Err(), os.ErrDeadlineExceeded) {
			t.Errorf("write: %v, writer's error %v; want the deadline's", err, w.Err())
		}
		if len(read) < 256<<10 || len(read) >= len(event) {
			t.Errorf("the consumer read %d bytes, want 256 KiB and not the whole chunk", len(read))
		}
	})
}
