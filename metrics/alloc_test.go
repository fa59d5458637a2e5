//go:build !race

package metrics

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

const contentEvent = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"The quick brown fox jumps over the lazy dog. "}` + "\n\n"

func canonicalFrame(ev string) *event.Frame {
	return &event.Frame{Raw: []byte(ev), Data: []byte(ev[6 : len(ev)-2]), Canonical: true}
}

// Counting events by type for metrics adds no allocation to the
// pass-through path, and neither does the metrics tap.
func TestCountedStreamDoesNotAllocate(t *testing.T) {
	m := New(Options{NoRuntime: true})
	tap := m.Tap(&relay.RunReport{Start: time.Now()})
	w := bufio.NewWriter(io.Discard)
	st := (&event.Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	st.Tap, st.Counts = tap, &event.Counts{}
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
	for i := range event.NumLabels {
		if event.Label(i) == "TEXT_MESSAGE_CONTENT" {
			ti = i
		}
	}
	if c := st.Counts.By[event.ToConsumer][ti]; c.Events < 1000 || c.Bytes != c.Events*len(contentEvent) {
		t.Errorf("counted %+v", c)
	}
}
