//go:build !race

package relay

import (
	"bufio"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Passing a canonical content event through to the consumer's connection,
// flush included, must not allocate: the pending buffer is pooled and the
// write deadline is a field.
func TestPassThroughToConnectionDoesNotAllocate(t *testing.T) {
	c := &stuckConn{}
	cw := &consumerWriter{conn: c, chunked: true, timeout: time.Minute}
	w := bufio.NewWriterSize(cw, 16)
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	startRun(t, st)
	f := canonicalFrame(contentEvent)
	if n := testing.AllocsPerRun(1000, func() {
		if err := st.Frame(f); err != nil {
			t.Fatal(err)
		}
		if err := flush(w, cw); err != nil {
			t.Fatal(err)
		}
		c.wrote.Reset()
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
	if c.writes < 1000 {
		t.Fatalf("%d writes: events were not flushed one by one", c.writes)
	}
}
