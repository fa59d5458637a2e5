//go:build unix && !race

package wire

import (
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// Reads and writes allocate nothing: their RawConn callbacks are made once
// per connection (Init).
func TestConnDoesNotAllocate(t *testing.T) {
	a, b := connPair(t)
	testkit.NoAllocs(t, a, b)
}

// Unsolicited on an idle connection, as a client asks before each reuse,
// allocates nothing.
func TestConnUnsolicitedDoesNotAllocate(t *testing.T) {
	_, b := connPair(t)
	if n := testing.AllocsPerRun(1000, func() { b.Unsolicited() }); n != 0 { //nolint:errcheck
		t.Errorf("Unsolicited allocates %.1f times a call", n)
	}
}

// A small chunk written within a stall limit, the stream's usual write,
// allocates nothing either: the writer hands itself to the Conn's write
// as the one to move the deadline (writeVecArmed).
func TestChunkWriterOnConnDoesNotAllocate(t *testing.T) {
	a, b := connPair(t)
	w := newChunkWriter(a, false, time.Minute)
	testkit.NoAllocs(t, flushEach{w}, b)
}

// flushEach writes to a ChunkWriter and flushes each write.
type flushEach struct{ w *ChunkWriter }

func (f flushEach) Write(p []byte) (int, error) {
	if _, err := f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), f.w.Flush()
}
