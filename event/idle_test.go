package event

import (
	"io"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// pieceReader returns one chunk per Read, as a producer's client does.
type pieceReader struct {
	chunks []string
	sc     *Scanner // when set, the scanner must hold no base-size buffer at each read of a new chunk
	t      *testing.T
	off    int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	if r.off == 0 && r.sc != nil && r.sc.Buffered() == 0 && r.sc.buf != nil && len(r.sc.buf) <= baseSize {
		r.t.Errorf("the scanner holds a %d-byte buffer while waiting for %q", len(r.sc.buf), r.chunks[0])
	}
	n := copy(p, r.chunks[0][r.off:])
	r.off += n
	if r.off == len(r.chunks[0]) {
		r.chunks, r.off = r.chunks[1:], 0
	}
	return n, nil
}

// A scanner of a relayed stream holds no buffer while it waits for the
// producer with nothing buffered (after a large frame, the grown buffer
// stays until reads have been small for a while, as before), and still
// returns every frame whole, also frames split across reads and frames
// larger than its base size.
func TestIdleScannerReleasesItsBuffer(t *testing.T) {
	big := "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":\"" + strings.Repeat("x", 3*baseSize) + "\"}\n\n"
	chunks := []string{testkit.RunStarted, testkit.ContentEvent[:10], testkit.ContentEvent[10:], ": keep-alive\n\n", testkit.ContentEvent + testkit.ContentEvent, big[:5], big[5:], testkit.RunFinished}
	r := &pieceReader{chunks: chunks, t: t}
	sc := NewIdleScanner(r, 0)
	r.sc = sc
	if sc.buf != nil {
		t.Fatal("a new scanner holds a buffer")
	}
	if got, want := rawFrames(t, sc, nil), strings.Join(chunks, ""); got != want {
		t.Errorf("frames\n%q\nwant\n%q", got, want)
	}
}
