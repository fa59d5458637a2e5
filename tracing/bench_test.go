package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

// BenchmarkRunSpan measures what tracing adds to a run when it is on: the
// tap's calls for a short streamed run (the consumer's traceparent read,
// the SERVER span started, the CLIENT span started and the producer's
// traceparent set, five events flushed, the report's attributes) and the
// two spans' export, in batches, to a collector on loopback. Off, there is
// no tap at all. The spans are flushed every 256 runs (a batch of 512
// spans), inside the timed loop: a tap in a loop ends spans faster than
// they are exported, and the queue would drop a quarter of them, their
// export then not measured. BenchmarkShortRun/traced in relay/ measures it on whole
// runs, paired against the same runs untraced ("tapped").
//
//	go test -run '^$' -bench RunSpan -benchmem ./tracing/
func BenchmarkRunSpan(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
	}))
	defer collector.Close()
	b.Setenv("OTEL_TRACES_EXPORTER", "")
	b.Setenv("OTEL_SDK_DISABLED", "")
	tr, err := New(context.Background(), Options{Endpoint: collector.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background()) //nolint:errcheck
	var consumer, producer fasthttp.RequestHeader
	consumer.SetMethod("POST")
	consumer.SetRequestURI("/agent")
	consumer.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	b.ReportAllocs()
	runs := 0
	for b.Loop() {
		tapShortRun(tr, &consumer, &producer, nil, "")
		if runs++; runs%256 == 0 {
			if err := tr.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// tapShortRun drives a tap of tr through a short streamed run, as the
// relay calls it: the consumer's request of consumer, from peer (nil: not
// TCP) on the route of prefix; the request to the producer's headers
// producer; five events flushed in two writes, RUN_FINISHED last.
func tapShortRun(tr *Tracer, consumer, producer *fasthttp.RequestHeader, peer net.Addr, prefix string) {
	v1 := negotiate.Current
	rep := &relay.RunReport{Route: "default", RoutePrefix: prefix, Peer: peer, RunID: "run-0123456789", ThreadID: "thread-0123456789", Start: time.Now()}
	tap := tr.Tap(rep)
	ht := tap.(relay.HeaderTap)
	ht.ConsumerHeaders(consumer)
	tap.Received(nil)
	rep.Consumer, rep.ConsumerLearnt = v1, negotiate.Declared
	ht.ProducerHeaders(producer)
	tap.Streaming(v1, negotiate.Version{})
	tap.Read(nil)
	tap.Flushed(1)
	tap.Flushed(5)
	rep.URL, rep.Status, rep.Producer, rep.Events, rep.Bytes, rep.Terminal = "http://agent:8000/agent", 200, v1, 5, 480, "RUN_FINISHED"
	rep.Duration = time.Since(rep.Start)
	tap.End(rep)
}
