//go:build !race

package relay

import (
	"bufio"
	"io"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// startRun passes a canonical RUN_STARTED through st, as a stream begins.
func startRun(t *testing.T, st *Stream) {
	t.Helper()
	if err := st.Frame(canonicalFrame(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")); err != nil {
		t.Fatal(err)
	}
}

// Passing a canonical content event through must not allocate.
func TestStreamFramePassThroughDoesNotAllocate(t *testing.T) {
	w := bufio.NewWriter(io.Discard)
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	startRun(t, st)
	f := canonicalFrame(contentEvent)
	if n := testing.AllocsPerRun(1000, func() {
		if err := st.Frame(f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
	if st.Plan().Translate {
		t.Fatal("the run was translated")
	}
}

// Scanning canonical frames from a steady stream must not allocate either.
func TestScannerDoesNotAllocatePerFrame(t *testing.T) {
	in := []byte(contentEvent)
	r := &repeatReader{b: in}
	sc := NewScanner(r, 0)
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := sc.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
}

// repeatReader returns b over and over.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}
