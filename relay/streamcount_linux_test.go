//go:build linux

package relay

import (
	"io"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A stream counts itself to the Relay's Poller as holding a goroutine
// while it relays and not while it is parked (the producer thinking), so
// that a Poller asked to release memory (wire.Poller.ReleaseMemory) does
// so once every stream is parked or ended. The count is zero with the only
// stream parked, and zero again after it woke and ended: a wake that did
// not count itself, or a stream that left twice, leaves it below zero.
func TestParkedStreamIsNotCountedRunning(t *testing.T) {
	pk := signalParker{make(chan struct{}, 16)}
	var pl *Poller
	h, br, release := heldStream(t, func(r *Relay) { pl = r.Poller; armingWith(r, pk.arm) },
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	testkit.Await(t, pk.parked, "the stream did not park")
	testkit.WaitFor(t, "the parked stream not counted", func() bool { return pl.w.Running() == 0 })
	release()
	if rest, err := io.ReadAll(br); err != nil || !strings.Contains(string(rest), "RUN_FINISHED") {
		t.Fatalf("after the pause: %q, %v", rest, err)
	}
	h.report()
	// The stream leaves the count after its report.
	testkit.WaitFor(t, "the ended stream not counted", func() bool { return pl.w.Running() == 0 })
}
