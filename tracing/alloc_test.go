//go:build !race

package tracing

import (
	"context"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// endedSpans is a span processor that counts the spans ended, as the
// batch processor is given them (each a snapshot), and exports none.
type endedSpans struct{ n int }

func (*endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e *endedSpans) OnEnd(sdktrace.ReadOnlySpan)                   { e.n++ }
func (*endedSpans) Shutdown(context.Context) error                  { return nil }
func (*endedSpans) ForceFlush(context.Context) error                { return nil }

// maxRunAllocs is what the tap of a traced run may allocate, its two spans
// made, their attributes set and the producer's traceparent written, the
// export aside (the OTLP exporter's conversion of each attribute, in the
// batch processor's goroutine). Most are the SDK's: the spans, their
// contexts, timestamps, events and attribute copies; the tap's own are
// itself, the ids of the log line and the consumer's strings (path, host,
// user agent, peer). The tap made 52 before its attributes shared one
// array set once per span, its span kinds, the route's span name and the
// producer's URL were made once, and the traceparent was written into the
// header directly.
const maxRunAllocs = 36

// TestRunTapAllocations pins what the tap of a traced run allocates, the
// consumer's request as a browser behind no proxy sends it: a regression
// shows as a count over maxRunAllocs.
func TestRunTapAllocations(t *testing.T) {
	ended := &endedSpans{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended))
	tr := newTracer(tp, Destination{}, "parentbased_always_on")
	var consumer, producer fasthttp.RequestHeader
	consumer.SetMethod("POST")
	consumer.SetRequestURI("/agent")
	consumer.SetHost("relay.example:8080")
	consumer.SetUserAgent("Mozilla/5.0")
	consumer.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	peer := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 51234}
	run := func() { tapShortRun(tr, &consumer, &producer, peer, "/") }
	n := testing.AllocsPerRun(200, run)
	if ended.n < 2*200 {
		t.Fatalf("%d spans ended, want 2 a run", ended.n)
	}
	if tp := string(producer.Peek("Traceparent")); len(tp) != 55 || tp[:36] != "00-4bf92f3577b34da6a3ce929d0e0e4736-" || tp[52:] != "-01" {
		t.Fatalf("producer's traceparent %q", tp)
	}
	if n > maxRunAllocs {
		t.Errorf("%v allocations a run, want %d at most", n, maxRunAllocs)
	}
	t.Logf("%v allocations a run", n)
}

// A Host header that names no port is read without net.SplitHostPort's
// error, an allocation.
func TestSplitHostDoesNotAllocate(t *testing.T) {
	for _, host := range []string{"relay.example", "relay.example:8080", "[::1]"} {
		if n := testing.AllocsPerRun(100, func() { splitHost(host, "http") }); n != 0 {
			t.Errorf("%q: %v allocations", host, n)
		}
	}
}
