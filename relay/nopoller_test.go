//go:build unix

package relay

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A Relay without a Poller makes no use of one: its stream's consumer is
// watched by a goroutine of the stream's own (watchConsumer), which notices
// the consumer hanging up all the same, and since that goroutine reads the
// connection the response says Connection: close.
func TestRelayWithoutPollerWatchesInAGoroutine(t *testing.T) {
	held := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		select {
		case <-held:
		case <-r.Context().Done():
		}
	}, func(r *Relay) { r.Poller = nil })
	t.Cleanup(func() { close(held) })
	c := testkit.DialConsumer(t, strings.TrimPrefix(h.url, "http://"))
	testkit.SendRun(t, c, testkit.MinimalInput)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Error("the response keeps the connection, which the watching goroutine reads")
	}
	rb := bufio.NewReader(resp.Body)
	if line, err := rb.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("first line %q, %v", line, err)
	}
	// The watcher is started before the header is written, but a stack dump
	// may be taken before the new goroutine first runs.
	testkit.WaitFor(t, "a goroutine watching the consumer", func() bool {
		return testkit.GoroutinesIn("relay.watchConsumer") > 0
	}, func() string { return "no goroutine watches the consumer" })
	c.Close()
	if rep := h.report(); rep.Abort != "consumer_gone" {
		t.Fatalf("the hangup was not noticed: abort %q", rep.Abort)
	}
}
