//go:build unix

package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// Without ReuseGoroutines each stream runs on a goroutine of its own, the
// persistent connection's next runs too (each hijacked), where ReuseGoroutines
// runs them on one (TestPersistentConnectionRunsOnOneGoroutine).
func TestDefaultCarrierGivesEachStreamAGoroutine(t *testing.T) {
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHeader+"\r\n"+chunk(shortRunEvents)+"0\r\n\r\n") //nolint:errcheck
	})
	ran := make(chan int, 8)
	addr, _ := rawRelay(t, upstream, func(*RunReport) { ran <- goroutineID() }, func(r *Relay) { r.ReuseGoroutines = false })
	c := testkit.DialConsumer(t, addr)
	br := bufio.NewReader(c)
	seen := map[int]bool{}
	for range 3 {
		testkit.SendRun(t, c, testkit.MinimalInput)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != shortRunEvents || resp.Close {
			t.Fatalf("response %q (close %v): %v", body, resp.Close, err)
		}
		select {
		case id := <-ran:
			if seen[id] {
				t.Fatalf("two runs ran on goroutine %d", id)
			}
			seen[id] = true
		case <-time.After(testkit.Liveness):
			t.Fatal("no run report")
		}
	}
}
