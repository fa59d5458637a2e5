//go:build !race

package relay

import (
	"io"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
)

// Passing a canonical content event through to the consumer's connection,
// flush included, must not allocate: the pending buffer is pooled, the write
// deadline is a field and, on a TCP socket, the raw write's callback is made
// once per writer.
func TestPassThroughToConnectionDoesNotAllocate(t *testing.T) {
	t.Run("conn", func(t *testing.T) {
		c := &memConn{}
		passThroughDoesNotAllocate(t, newConsumerWriter(c, true, time.Minute), c.wrote.Reset)
		if c.writes < 1000 {
			t.Fatalf("%d writes: events were not flushed one by one", c.writes)
		}
	})
	t.Run("socket", func(t *testing.T) {
		relaySide, consumerSide := testkit.TCPPair(t)
		go io.Copy(io.Discard, consumerSide) //nolint:errcheck // ends with the test's cleanup
		cw := newConsumerWriter(relaySide, true, time.Minute)
		if _, ok := cw.Conn().(*socketConn); wire.CanPoll && !ok {
			t.Fatal("a TCP connection is not written by descriptor")
		}
		passThroughDoesNotAllocate(t, cw, func() {})
	})
}

func passThroughDoesNotAllocate(t *testing.T, cw *consumerWriter, reset func()) {
	st := (&event.Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &cw.ChunkWriter)
	startRun(t, st)
	f := canonicalFrame(testkit.ContentEvent)
	if n := testing.AllocsPerRun(1000, func() {
		if err := st.Frame(f); err != nil {
			t.Fatal(err)
		}
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		reset()
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}

// startRun passes a canonical RUN_STARTED through st, as a stream begins.
func startRun(t *testing.T, st *event.Stream) {
	t.Helper()
	if err := st.Frame(canonicalFrame(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")); err != nil {
		t.Fatal(err)
	}
}
