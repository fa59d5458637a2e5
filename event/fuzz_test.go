package event

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// FuzzScannerFraming splits any byte stream into SSE frames (issue #7),
// with a frame limit; FuzzScanner in scanner_test.go checks the frames against
// a reference parser. Properties: no panic and no hang (the reader ends,
// the scanner ends); the frames, and where a frame over the limit stops
// the stream, do not depend on how the stream was cut into reads; a frame
// marked canonical is byte for byte what AppendFrame writes for it (so
// that copying Raw is the pass-through); what the relay writes for the
// frames scans back to the same frames, all canonical; and no frame is
// larger than the limit. Seeds: the repository's recorded streams. To fuzz:
//
//	go test -run '^$' -fuzz FuzzScannerFraming -fuzztime 60s ./event/
func FuzzScannerFraming(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "streams", "*.sse"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(7), uint16(0))
	}
	f.Add([]byte(testkit.Unusual), uint8(1), uint16(0))
	f.Add([]byte("\xEF\xBB\xBFdata: a\r\rdata:b\r\n\r\n: c\n\nid: 1\ndata\n\n"), uint8(2), uint16(16))
	f.Add([]byte("data: {\"a\":1}\n\ndata: "+string(bytes.Repeat([]byte("x"), 100))+"\n\n"), uint8(3), uint16(40))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8, limit uint16) {
		max := int(limit)
		whole, werr := scanPieces(stream, len(stream)+1, max)
		split, serr := scanPieces(stream, int(cut)%17+1, max)
		if !errors.Is(werr, serr) {
			t.Fatalf("read whole: %v; read in pieces of %d: %v", werr, int(cut)%17+1, serr)
		}
		if len(whole) != len(split) {
			t.Fatalf("%d frames whole, %d in pieces", len(whole), len(split))
		}
		var out []byte
		for i, f := range whole {
			g := split[i]
			// Raw of a frame that is re-framed anyway may differ by the LF
			// of a CRLF cut between reads (a CR ends the frame at once).
			if (f.Canonical && !bytes.Equal(f.Raw, g.Raw)) || !bytes.Equal(f.Data, g.Data) || !bytes.Equal(f.Fields, g.Fields) || f.Canonical != g.Canonical || f.HasData() != g.HasData() {
				t.Fatalf("frame %d: %v whole, %v in pieces", i, f, g)
			}
			size := len(f.Raw)
			if bytes.HasSuffix(f.Raw, []byte("\r\n")) {
				size-- // the LF of a closing CRLF is not counted (NewScanner)
			}
			if max > 0 && size > max {
				t.Fatalf("frame of %d bytes over the limit %d", size, max)
			}
			var canon []byte
			if f.HasData() {
				canon = AppendFrame(nil, f.Fields, f.Data)
			} else {
				canon = append(bytes.Clone(f.Fields), '\n')
			}
			if f.Canonical && !bytes.Equal(f.Raw, canon) {
				t.Fatalf("frame %q is marked canonical, but its canonical form is %q", f.Raw, canon)
			}
			if len(out) == 0 && bytes.HasPrefix(canon, bom) {
				out = append(out, bom...) // as Stream.put: the consumer strips this mark, not the frame's
			}
			out = append(out, canon...)
		}
		if werr != nil {
			return // the stream was refused (a frame over the limit)
		}
		again, err := scanPieces(out, len(out)+1, 0)
		if err != nil || len(again) != len(whole) {
			t.Fatalf("re-scanning what the relay writes: %d frames of %d, %v", len(again), len(whole), err)
		}
		for i, f := range again {
			if !f.Canonical || !bytes.Equal(f.Data, whole[i].Data) || !bytes.Equal(f.Fields, whole[i].Fields) || f.HasData() != whole[i].HasData() {
				t.Fatalf("frame %d written as %q scans back as %v", i, f.Raw, f)
			}
		}
	})
}

// scanPieces scans stream read in pieces of n bytes and returns copies of its
// frames, and the error that ended it (nil at a clean end).
func scanPieces(stream []byte, n, max int) ([]Frame, error) {
	sc := NewScanner(&pieces{b: stream, n: n}, max)
	var frames []Frame
	for {
		f, err := sc.Next()
		if err == io.EOF {
			return frames, nil
		}
		if err != nil {
			return frames, err
		}
		c := Frame{Raw: bytes.Clone(f.Raw), Fields: bytes.Clone(f.Fields), Canonical: f.Canonical}
		if f.HasData() {
			c.Data = append([]byte{}, f.Data...)
		}
		frames = append(frames, c)
		if len(frames) > len(stream)+1 {
			panic("more frames than bytes: the scanner does not advance")
		}
	}
}

// pieces reads b n bytes at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}
