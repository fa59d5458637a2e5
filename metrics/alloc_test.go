//go:build !race

package metrics

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

const contentEvent = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"The quick brown fox jumps over the lazy dog. "}` + "\n\n"

func canonicalFrame(event string) relay.Frame {
	return relay.Frame{Raw: []byte(event), Data: []byte(event[6 : len(event)-2]), Canonical: true}
}

// Counting events by type for metrics adds no allocation to the
// pass-through path, and neither does the metrics tap.
func TestCountedStreamDoesNotAllocate(t *testing.T) {
	m := New(Options{NoRuntime: true})
	tap := m.Tap(&relay.RunReport{Start: time.Now()})
	w := bufio.NewWriter(io.Discard)
	st := (&relay.Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	st.Tap, st.Counts = tap, &relay.EventCounts{}
	if err := st.Frame(canonicalFrame(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")); err != nil {
		t.Fatal(err)
	}
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
	ti := -1
	for i := range relay.NumEventLabels {
		if relay.EventLabel(i) == "TEXT_MESSAGE_CONTENT" {
			ti = i
		}
	}
	if c := st.Counts.By[relay.ToConsumer][ti]; c.Events < 1000 || c.Bytes != c.Events*len(contentEvent) {
		t.Errorf("counted %+v", c)
	}
}
