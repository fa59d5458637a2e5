//go:build !race

package event

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
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
	f := canonicalFrame(testkit.ContentEvent)
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
	in := []byte(testkit.ContentEvent)
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

// A burst grows the Scanner's buffer from the pools and Release gives it
// back: a fast run leaves no buffer behind as garbage (it was tens of KiB
// per run, most of the relay's GC work at saturation).
func TestScannerBurstBuffersArePooled(t *testing.T) {
	in := testkit.BenchStream(2000, testkit.ContentEvent) // about 250 KB: grows to burstSize
	scan := func() {
		sc := NewIdleScanner(bytes.NewReader(in), 0)
		for {
			if _, err := sc.Next(); err != nil {
				break
			}
		}
		if len(sc.buf) != burstSize {
			t.Fatalf("the buffer is %d bytes, want the burst size %d", len(sc.buf), burstSize)
		}
		sc.Release()
	}
	scan()
	// The Scanner and bytes.Reader themselves; the buffers come from pools.
	if n := testing.AllocsPerRun(50, scan); n > 2 {
		t.Errorf("%.0f allocations per run, want at most 2 (no buffer)", n)
	}
}

// A short translated run's allocations: what a run's translation makes
// (its chain run, the states of the steps its events meet, its ids), which
// a run of 5 events pays on every run.
func TestStreamTranslatedRunAllocations(t *testing.T) {
	in := testkit.BenchStream(5, testkit.ContentEvent)
	tr := &Translator{}
	w := bufio.NewWriter(io.Discard)
	r := bytes.NewReader(in)
	run := func() {
		r.Reset(in)
		st := tr.NewStream(negotiate.MustParse("0.0.45"), negotiate.Version{}, w)
		pumpAll(t, st, r)
		st.Close()
	}
	run()
	const want = 29
	if n := testing.AllocsPerRun(100, run); n > want {
		t.Errorf("%.0f allocations a run, want at most %d", n, want)
	}
}
