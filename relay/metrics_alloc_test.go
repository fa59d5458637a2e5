//go:build !race

package relay

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Counting events by type for metrics adds no allocation to the
// pass-through path, and neither does the metrics tap.
func TestCountedStreamDoesNotAllocate(t *testing.T) {
	m := NewMetrics(MetricsOptions{NoRuntime: true})
	tap := m.Tap(&RunReport{Start: time.Now()})
	w := bufio.NewWriter(io.Discard)
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	st.Tap, st.Counts = tap, &EventCounts{}
	startRun(t, st)
	f := canonicalFrame(contentEvent)
	if n := testing.AllocsPerRun(1000, func() {
		if err := st.Frame(f); err != nil {
			t.Fatal(err)
		}
		tap.Read(f.Raw)
		tap.Flushed(st.Events)
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
	if c := st.Counts.By[ToConsumer][eventIndex([]byte("TEXT_MESSAGE_CONTENT"))]; c.Events < 1000 || c.Bytes != c.Events*len(contentEvent) {
		t.Errorf("counted %+v", c)
	}
}
