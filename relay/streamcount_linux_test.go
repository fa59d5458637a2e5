//go:build linux

package relay

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A stream counts itself to the Relay's Poller as holding a goroutine
// while it relays and not while it is parked (the producer thinking), so
// that a Poller asked to release memory (wire.Poller.ReleaseMemory) does
// so once every stream is parked or ended. The count is zero with the only
// stream parked, one once it wakes, and zero again after it ended.
func TestParkedStreamIsNotCountedRunning(t *testing.T) {
	pk := signalParker{wirePoller(t), make(chan struct{}, 16)}
	count := &streamCount{signalParker: pk}
	h, br, release := heldStream(t, func(r *Relay) { parkingWith(r, count) },
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	testkit.Await(t, pk.parked, "the stream did not park")
	testkit.WaitFor(t, "the parked stream not counted", func() bool { return count.running.Load() == 0 })
	release()
	if rest, err := io.ReadAll(br); err != nil || !strings.Contains(string(rest), "RUN_FINISHED") {
		t.Fatalf("after the pause: %q, %v", rest, err)
	}
	h.report()
	// The stream leaves the count after its report.
	testkit.WaitFor(t, "the ended stream not counted", func() bool { return count.running.Load() == 0 })
	if count.negative.Load() {
		t.Fatal("a stream left the count without entering it")
	}
	if count.entered.Load() < 2 {
		t.Fatalf("the stream entered %d times: it did not wake", count.entered.Load())
	}
}

// streamCount parks as its signalParker does and counts as the Poller
// does, for a test to read.
type streamCount struct {
	signalParker
	running, entered atomic.Int64
	negative         atomic.Bool
}

func (c *streamCount) Enter() { c.running.Add(1); c.entered.Add(1) }
func (c *streamCount) Leave() {
	if c.running.Add(-1) < 0 {
		c.negative.Store(true)
	}
}
