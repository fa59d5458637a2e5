//go:build linux

package relay

import (
	"io"
	"strings"
	"testing"
	"time"
)

// A relay whose only stream has parked (the producer thinking) releases
// memory; the stream wakes, ends, and the relay, quiet again, releases
// again. The count of streams with a goroutine is back to zero after each.
func TestQuietRelayReleasesMemory(t *testing.T) {
	q, releases := countingReleaser(5*time.Millisecond, time.Millisecond)
	h, br, release := heldStream(t, func(r *Relay) { r.memory = q },
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	waitFor(t, "a release with the stream parked", func() bool { return releases.Load() >= 1 })
	if n := q.running.Load(); n != 0 {
		t.Fatalf("%d streams counted running with the only one parked", n)
	}
	before := releases.Load()
	release()
	if rest, err := io.ReadAll(br); err != nil || !strings.Contains(string(rest), "RUN_FINISHED") {
		t.Fatalf("after the pause: %q, %v", rest, err)
	}
	h.report()
	waitFor(t, "a release after the stream ended", func() bool { return releases.Load() > before })
	if n := q.running.Load(); n != 0 {
		t.Fatalf("%d streams counted running after the only one ended", n)
	}
}
