package relay

import (
	"os"
	"testing"
)

// reusing returns the harness's relay's ReuseGoroutines: true, as serve's
// relays, unless the test runs under TestStreamsUnderEitherCarrier's
// default (a goroutine per stream).
func reusing() bool {
	return os.Getenv(carrierVar) != "default"
}

// carrierVar names the environment variable TestStreamsUnderEitherCarrier
// sets for the tests it runs (t.Setenv: restored after them).
const carrierVar = "RELAY_TEST_CARRIER"

// The relay's stream tests, run under each carrier: the default (a
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
		{"GzipResponseIsDecoded", TestGzipResponseIsDecoded},
		{"NotJSONFrameIsRelayedUntouched", TestNotJSONFrameIsRelayedUntouched},
		{"SlowConsumerSlowsTheProducer", TestSlowConsumerSlowsTheProducer},
		{"StalledConsumerIsCut", TestStalledConsumerIsCut},
		{"SteadyConsumerOfALargeEventIsNotStalled", TestSteadyConsumerOfALargeEventIsNotStalled},
		{"ConsumerThatStopsInsideALargeEventIsCut", TestConsumerThatStopsInsideALargeEventIsCut},
		{"ProducerConnectionReusedAfterRun", TestProducerConnectionReusedAfterRun},
		{"EmptyEventStreamEndsTheRun", TestEmptyEventStreamEndsTheRun},
		{"BrokenChunkFramingEndsWithRunError", TestBrokenChunkFramingEndsWithRunError},
		{"ConsumerVersionIsLearnt", TestConsumerVersionIsLearnt},
	}
	streamTests = append(streamTests, platformStreamTests...)
	for _, carrier := range []string{"default", "reuse"} {
		t.Run(carrier, func(t *testing.T) {
			t.Setenv(carrierVar, carrier)
			for _, st := range streamTests {
				t.Run(st.name, st.test)
			}
		})
	}
}
