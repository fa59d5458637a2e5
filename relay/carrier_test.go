package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// carrierOf returns the Carrier the harness's relay runs its streams
// with: ReuseGoroutines, as serve's relays, unless the test runs under
// TestStreamsUnderEitherCarrier's default (a goroutine per stream).
func carrierOf() Carrier {
	if os.Getenv(carrierVar) == "default" {
		return nil
	}
	return ReuseGoroutines{}
}

// carrierVar names the environment variable TestStreamsUnderEitherCarrier
// sets for the tests it runs (t.Setenv: restored after them).
const carrierVar = "RELAY_TEST_CARRIER"

// The relay's stream tests, run under each Carrier: the nil default (a
// goroutine per stream, no parking, no hand-over in place) and
// ReuseGoroutines (in place, hijacked, woken), which every other test of
// the harness uses.
func TestStreamsUnderEitherCarrier(t *testing.T) {
	streamTests := []struct {
		name string
		test func(*testing.T)
	}{
		{"PassThroughIsByteExact", TestPassThroughIsByteExact},
		{"DeliversEachEventBeforeTheNext", TestDeliversEachEventBeforeTheNext},
		{"FramingVariantsArriveCanonical", TestFramingVariantsArriveCanonical},
		{"ConsumerGoneCancelsUpstream", TestConsumerGoneCancelsUpstream},
		{"BrokenStreamEndsWithRunError", TestBrokenStreamEndsWithRunError},
		{"IdleProducerEndsWithRunError", TestIdleProducerEndsWithRunError},
		{"BusyProducerOutlivesTheIdleTimeout", TestBusyProducerOutlivesTheIdleTimeout},
		{"RunTimeoutEndsWithRunError", TestRunTimeoutEndsWithRunError},
		{"OversizedFrameEndsWithRunError", TestOversizedFrameEndsWithRunError},
		{"CleanCloseInsideRunIsRelayedAsIs", TestCleanCloseInsideRunIsRelayedAsIs},
		{"EndRunsWritesRunError", TestEndRunsWritesRunError},
		{"StreamKeepAliveOnTheWire", TestStreamKeepAliveOnTheWire},
		{"StreamResponseToHTTP10", TestStreamResponseToHTTP10},
		{"IdleStreamConsumerGoneCancelsPromptly", TestIdleStreamConsumerGoneCancelsPromptly},
		{"GzipAnswerIsDecoded", TestGzipAnswerIsDecoded},
		{"NotJSONFrameIsRelayedUntouched", TestNotJSONFrameIsRelayedUntouched},
		{"SlowConsumerSlowsTheProducer", TestSlowConsumerSlowsTheProducer},
		{"StalledConsumerIsCut", TestStalledConsumerIsCut},
		{"StreamEndsAfterTheRequestedRun", TestStreamEndsAfterTheRequestedRun},
		{"HangupWatchKeptAcrossRuns", TestHangupWatchKeptAcrossRuns},
		{"ProducerConnectionReusedAfterRun", TestProducerConnectionReusedAfterRun},
		{"EmptyEventStreamEndsTheRun", TestEmptyEventStreamEndsTheRun},
		{"BrokenChunkFramingEndsWithRunError", TestBrokenChunkFramingEndsWithRunError},
		{"ConsumerVersionIsLearnt", TestConsumerVersionIsLearnt},
	}
	for _, carrier := range []string{"default", "reuse"} {
		t.Run(carrier, func(t *testing.T) {
			t.Setenv(carrierVar, carrier)
			for _, st := range streamTests {
				t.Run(st.name, st.test)
			}
		})
	}
}

// Under the nil Carrier each stream runs on a goroutine of its own, the
// kept connection's next runs too (each hijacked), where ReuseGoroutines
// runs them on one (TestKeptConnectionRunsOnOneGoroutine).
func TestDefaultCarrierGivesEachStreamAGoroutine(t *testing.T) {
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHead+"\r\n"+chunk(shortRunEvents)+"0\r\n\r\n") //nolint:errcheck
	})
	ran := make(chan int, 8)
	addr, _ := rawRelay(t, upstream, func(*RunReport) { ran <- goroutineID() }, func(r *Relay) { r.Carrier = nil })
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
			t.Fatalf("answer %q (close %v): %v", body, resp.Close, err)
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
