package wire

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// decodeAll feeds wire to a framing in reads of the given sizes (cycled)
// and returns the data, the first error and whether the body completed.
func decodeAll(f Framing, wire []byte, sizes []int) ([]byte, error, bool) {
	var out []byte
	for i, k := 0, 0; i < len(wire); k++ {
		n := min(sizes[k%len(sizes)], len(wire)-i)
		buf := append([]byte(nil), wire[i:i+n]...)
		i += n
		w, err := f.Decode(buf)
		out = append(out, buf[:w]...)
		if err != nil {
			return out, err, f.Done()
		}
	}
	return out, nil, f.Done()
}

// chunk encodes data in chunks of the given sizes, with an extension on
// some size lines and a trailer when asked.
func chunkEncode(r *rand.Rand, data []byte, trailer bool) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		n := min(1+r.IntN(40), len(data))
		fmt.Fprintf(&b, "%x", n)
		switch r.IntN(4) {
		case 0:
			b.WriteString(";name=value")
		case 1:
			b.WriteString(" \t;name") // whitespace before an extension (RFC 9112's BWS)
		}
		b.WriteString("\r\n")
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	b.WriteString("0\r\n")
	if trailer {
		b.WriteString("X-Trailer: yes\r\nX-Other: 1\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// Any chunking, read in any pieces, decodes to the data, in place.
func TestChunkedDecodesAnySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		data := make([]byte, r.IntN(300))
		for j := range data {
			data[j] = "data: {}\r\n"[r.IntN(10)]
		}
		wire := chunkEncode(r, data, i%3 == 0)
		sizes := []int{1 + r.IntN(7), 1 + r.IntN(64), 1 + r.IntN(3)}
		got, err, done := decodeAll(NewFraming(-1), wire, sizes)
		if err != nil || !done || !bytes.Equal(got, data) {
			t.Fatalf("case %d (reads %v): %v done=%v\nwire %q\ngot  %q\nwant %q", i, sizes, err, done, wire, got, data)
		}
		// Whatever follows the end is noted, not returned.
		f := NewFraming(-1)
		got, err, _ = decodeAll(f, append(wire, "HTTP/1.1 200 OK\r\n"...), []int{len(wire) + 100})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("case %d with excess: %v %q", i, err, got)
		}
	}
}

// A trailer of any length, one field or many, in any pieces, is dropped:
// the body is complete at its empty line, and nothing after it is taken
// for the body's. A size line is still bounded (maxChunkLine).
func TestChunkedDropsTrailersOfAnyLength(t *testing.T) {
	for _, trailer := range []string{
		"X-Checksum: " + strings.Repeat("c", 5<<10) + "\r\n",
		"X-Checksum: " + strings.Repeat("c", 1<<20) + "\r\n",
		strings.Repeat("X-Part: "+strings.Repeat("p", 1000)+"\r\n", 64),
	} {
		wire := "5\r\nhello\r\n0\r\n" + trailer + "\r\n"
		for _, sizes := range [][]int{{3}, {4 << 10}, {len(wire)}} {
			got, err, done := decodeAll(NewFraming(-1), []byte(wire+"HTTP/1.1"), sizes)
			if err != nil || !done || string(got) != "hello" {
				t.Errorf("a %d-byte trailer in reads of %v: %.40q, %v, done %v", len(trailer), sizes, got, err, done)
			}
		}
	}
}

func TestChunkedRefusesMalformedFraming(t *testing.T) {
	for _, wire := range []string{
		"5\nhello\r\n0\r\n\r\n",          // bare LF after the size
		"5\r\nhello\n0\r\n\r\n",          // bare LF after the data
		"5\r\nhelloX\r\n0\r\n\r\n",       // data longer than its size
		"\r\nhello\r\n0\r\n\r\n",         // no size
		"g\r\nhello\r\n0\r\n\r\n",        // not hex
		"5 5\r\nhello\r\n0\r\n\r\n",      // digits after spaces
		"5 \r\nhello\r\n0\r\n\r\n",       // whitespace after the size, no extension
		"5\t\r\nhello\r\n0\r\n\r\n",      // the same with a tab
		";x\r\n",                         // an extension without a size
		"1 ;a\n\r\n",                     // a bare LF in an extension
		"fffffffffffffffff\r\n",          // larger than any body
		"5\r" + strings.Repeat(";", 10),  // the CR not followed by LF
		"5" + strings.Repeat(" ", 5<<10), // an endless size line
	} {
		_, err, _ := decodeAll(NewFraming(-1), []byte(wire), []int{3})
		if err != ErrBadChunk {
			t.Errorf("%.40q: err %v, want ErrBadChunk", wire, err)
		}
	}
}

func TestFramingByLengthAndClose(t *testing.T) {
	got, err, done := decodeAll(NewFraming(5), []byte("helloEXTRA"), []int{3})
	if err != nil || !done || string(got) != "hello" {
		t.Errorf("length: %q %v %v", got, err, done)
	}
	f := NewFraming(5)
	if n, _ := f.Decode([]byte("hello!")); n != 5 || f.Extra() != 1 {
		t.Errorf("length with excess: %d, %d extra bytes, want 5, 1", n, f.Extra())
	}
	if n, _ := f.Decode([]byte("more")); n != 0 || f.Extra() != 5 {
		t.Errorf("after the end: %d, %d extra bytes, want 0, 5", n, f.Extra())
	}
	f = NewFraming(-1)
	if n, err := f.Decode([]byte("5\r\nhello\r\n0\r\n\r\nHTTP")); n != 5 || err != nil || !f.Done() || f.Extra() != 4 {
		t.Errorf("chunked with excess: %d, %v, done %v, %d extra bytes", n, err, f.Done(), f.Extra())
	}
	if f := NewFraming(0); !f.Done() {
		t.Error("an empty body is not done")
	}
	f = NewFraming(-2)
	if n, _ := f.Decode([]byte("anything")); n != 8 || f.End() != io.EOF {
		t.Errorf("close-delimited: %d, end %v", n, f.End())
	}
	for _, cl := range []int{-1, 5} {
		f := NewFraming(cl)
		f.Decode([]byte("4\r\nab"[:min(4, 6)])) //nolint:errcheck
		if f.End() != io.ErrUnexpectedEOF {
			t.Errorf("content-length %d cut short: end %v", cl, f.End())
		}
	}
}

// FuzzChunked: whatever the bytes and however they are read, decoding
// never panics, never returns more than it was given, and a well-formed
// encoding of the same data decodes the same way in any split.
func FuzzChunked(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(3))
	f.Add([]byte("1;x\r\na\r\n0\r\nT: 1\r\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, wire []byte, split uint8) {
		size := int(split)%17 + 1
		fr := NewFraming(-1)
		for i := 0; i < len(wire); i += size {
			buf := append([]byte(nil), wire[i:min(i+size, len(wire))]...)
			n, err := fr.Decode(buf)
			if n < 0 || n > len(buf) {
				t.Fatalf("decoded %d of %d bytes", n, len(buf))
			}
			if err != nil {
				return
			}
		}
		whole, err1, done1 := decodeAll(NewFraming(-1), wire, []int{len(wire) + 1})
		split1, err2, done2 := decodeAll(NewFraming(-1), wire, []int{size})
		if (err1 == nil) != (err2 == nil) || done1 != done2 || (err1 == nil && !bytes.Equal(whole, split1)) {
			t.Fatalf("split %d changed the result: %q %v %v / %q %v %v", size, whole, err1, done1, split1, err2, done2)
		}
	})
}

// Rest says where a body ended in the read that ended it, for a connection
// kept for the next message: the bytes after it are left as they came,
// however the body was read, chunked or by its length.
func TestFramingRestIsWhatFollowsTheBody(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\n"
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		data := make([]byte, r.IntN(200))
		for j := range data {
			data[j] = "data: {}\r\n"[r.IntN(10)]
		}
		for _, c := range []struct {
			cl   int
			body []byte
		}{{-1, chunkEncode(r, data, i%2 == 0)}, {len(data), data}} {
			wire := append(append([]byte(nil), c.body...), next...)
			f := NewFraming(c.cl)
			var got []byte
			size := 1 + r.IntN(len(wire))
			for off := 0; off < len(wire); {
				buf := append([]byte(nil), wire[off:min(off+size, len(wire))]...)
				n, err := f.Decode(buf)
				if err != nil {
					t.Fatalf("case %d (Content-Length %d): %v", i, c.cl, err)
				}
				got = append(got, buf[:n]...)
				if f.Done() {
					rest := string(buf[len(buf)-f.Rest():]) + string(wire[off+len(buf):])
					if rest != next || !bytes.Equal(got, data) {
						t.Fatalf("case %d (Content-Length %d, reads of %d): rest %q, data %q", i, c.cl, size, rest, got)
					}
					break
				}
				if f.Rest() != 0 {
					t.Fatalf("case %d: rest %d before the end", i, f.Rest())
				}
				off += len(buf)
			}
			if !f.Done() {
				t.Fatalf("case %d (Content-Length %d): not done", i, c.cl)
			}
		}
	}
}
