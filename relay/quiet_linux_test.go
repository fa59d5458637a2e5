//go:build linux

package relay

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A relay whose only stream has parked (the producer thinking) releases
// memory; the stream wakes, ends, and the relay, quiet again, releases
// again. The count of streams with a goroutine is back to zero after each.
func TestQuietRelayReleasesMemory(t *testing.T) {
	var releases atomic.Int32
	q := &quietMemory{after: 5 * time.Millisecond, gap: time.Millisecond, release: func() { releases.Add(1) }}
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		sse(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		<-release
		sse(w, `data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, func(r *Relay) { r.quiet = q })
	resp := h.post("/agent", minimalInput)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("first line %q, %v", line, err)
	}
	waitFor(t, "a release with the stream parked", func() bool { return releases.Load() >= 1 })
	if n := q.running.Load(); n != 0 {
		t.Fatalf("%d streams counted running with the only one parked", n)
	}
	before := releases.Load()
	once.Do(func() { close(release) })
	if rest, err := io.ReadAll(br); err != nil || !strings.Contains(string(rest), "RUN_FINISHED") {
		t.Fatalf("after the pause: %q, %v", rest, err)
	}
	h.report()
	waitFor(t, "a release after the stream ended", func() bool { return releases.Load() > before })
	if n := q.running.Load(); n != 0 {
		t.Fatalf("%d streams counted running after the only one ended", n)
	}
}
