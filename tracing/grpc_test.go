package tracing_test

import (
	"context"
	"encoding/hex"
	"net"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/agui-relay/agui-relay/internal/relaytest"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/tracing"
)

// grpcCollector is an OTLP/gRPC collector on loopback: a gRPC server of
// the collector's trace service, sending the spans it receives to spans.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	spans chan *tracepb.Span
}

func (g *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.spans <- s
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// newGRPCCollector serves a grpcCollector and returns it and its address.
func newGRPCCollector(t *testing.T) (*grpcCollector, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &grpcCollector{spans: make(chan *tracepb.Span, 64)}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, g)
	go srv.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	return g, ln.Addr().String()
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over gRPC, to the collector
// OTEL_EXPORTER_OTLP_ENDPOINT names (as it is: no path appended).
func TestExportOverGRPC(t *testing.T) {
	cleanEnv(t)
	g, addr := newGRPCCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	tr := newTracer(t, tracing.Options{})
	if d := tr.Destination(); d.Protocol != "grpc" || d.Endpoint != "http://"+addr {
		t.Errorf("destination %+v", d)
	}
	h := relaytest.New(t, producerTraceparents(make(chan []string, 1), testkit.RunStarted+testkit.RunFinished), func(r *relay.Relay) { r.Tap = tr.Tap })
	tp := "00-" + consumerTrace + "-" + consumerParent + "-01"
	testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput, "Traceparent", tp))
	h.Report()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	kinds := map[tracepb.Span_SpanKind]bool{}
	for range 2 {
		s := testkit.Await(t, g.spans, "no span exported over gRPC")
		if hex.EncodeToString(s.TraceId) != consumerTrace {
			t.Errorf("span %q in trace %x, want the consumer's", s.Name, s.TraceId)
		}
		kinds[s.Kind] = true
	}
	if !kinds[tracepb.Span_SPAN_KIND_SERVER] || !kinds[tracepb.Span_SPAN_KIND_CLIENT] {
		t.Errorf("span kinds %v, want a server span and a client span", kinds)
	}
}

// OTEL_TRACES_EXPORTER=otlp with OTEL_EXPORTER_OTLP_ENDPOINT exports over
// plain HTTP to the collector's /v1/traces.
func TestExportOverHTTPFromBaseEndpoint(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t) // fails the test on a path other than /v1/traces
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
	tr := newTracer(t, tracing.Options{})
	h := relaytest.New(t, nil, func(r *relay.Relay) { r.Tap = tr.Tap })
	testkit.ReadAll(t, h.Post("/agent", `{"threadId":1}`))
	h.Report()
	if s := rc.span(t, tr).span; s.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span %q of kind %v", s.Name, s.Kind)
	}
}

// A collector that is down costs no run, over either protocol: the run
// streams whole, its spans are dropped, and the exporter's failure is the
// flush's.
func TestCollectorDownCostsNoRun(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", testkit.ClosedURL(t))
			tr, err := tracing.New(context.Background(), tracing.Options{})
			if err != nil || tr == nil {
				t.Fatalf("New = %v, %v", tr, err)
			}
			// The exporter retries for up to a minute: the test waits a
			// moment for it, no more.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				tr.Shutdown(ctx) //nolint:errcheck // the collector is down
			})
			stream := testkit.RunStarted + testkit.ContentEvent + testkit.RunFinished
			h := relaytest.New(t, producerTraceparents(make(chan []string, 1), stream), func(r *relay.Relay) { r.Tap = tr.Tap })
			if body := testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput)); body != stream {
				t.Errorf("stream %q, want the producer's whole", body)
			}
			if rep := h.Report(); rep.Terminal != "RUN_FINISHED" || rep.Abort != "" {
				t.Errorf("run ended %q, abort %q", rep.Terminal, rep.Abort)
			}
			// Refused at once over HTTP; over gRPC, retried until the deadline.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := tr.ForceFlush(ctx); err == nil {
				t.Errorf("a flush to a collector that is down succeeded")
			}
		})
	}
}
