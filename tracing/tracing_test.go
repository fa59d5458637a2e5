package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/proto"

	"github.com/agui-relay/agui-relay/internal/relaytest"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/tracing"
)

// exported is a span as a collector received it, with its resource.
type exported struct {
	resource *resourcepb.Resource
	span     *tracepb.Span
}

// receiver is an OTLP/HTTP collector: it decodes each export request
// (protobuf) and sends its spans to spans.
type receiver struct {
	url   string
	spans chan exported
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{spans: make(chan exported, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the collector got %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "not an OTLP/HTTP export", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			t.Errorf("the collector cannot decode an export: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rc.spans <- exported{rs.Resource, s}
				}
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out) //nolint:errcheck
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

// span returns the next span exported once the runs so far are flushed.
func (rc *receiver) span(t *testing.T, tr *tracing.Tracer) exported {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return testkit.Await(t, rc.spans, "no span exported")
}

// pair returns the SERVER span and the CLIENT span (nil when want is 1)
// of the next request, once the runs so far are flushed.
func (rc *receiver) pair(t *testing.T, tr *tracing.Tracer, want int) (server, client *tracepb.Span) {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range want {
		s := testkit.Await(t, rc.spans, "no span exported").span
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			server = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			client = s
		}
	}
	if server == nil || (want > 1) != (client != nil) {
		t.Fatalf("spans: server %v, client %v; want a server span and %d client span", server, client, want-1)
	}
	return server, client
}

// none fails the test when a span was exported: called once everything
// that could export did (a flush, or no Tracer at all).
func (rc *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-rc.spans:
		t.Errorf("span %q exported", s.span.Name)
	default:
	}
}

// cleanEnv unsets the OpenTelemetry environment the tests depend on.
func cleanEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
}

// newTracer returns a Tracer exporting to rc, shut down at the test's end.
func newTracer(t *testing.T, opts tracing.Options) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.New(context.Background(), opts)
	if err != nil || tr == nil {
		t.Fatalf("New = %v, %v; want a Tracer", tr, err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck
	return tr
}

// producerTraceparents is a producer that sends the traceparent of each
// request to got and answers stream.
func producerTraceparents(got chan<- []string, stream ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values("Traceparent")
		testkit.StreamHeaders(w)
		testkit.SSE(w, stream...)
	}
}

func attrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func resourceAttr(r *resourcepb.Resource, key string) string {
	for _, kv := range r.GetAttributes() {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func eventNames(s *tracepb.Span) []string {
	var names []string
	for _, e := range s.Events {
		names = append(names, e.Name)
	}
	return names
}

// wantAttrs checks the string, int and bool attributes of s.
func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("attribute %s missing", k)
			continue
		}
		var g any
		switch w.(type) {
		case string:
			g = v.GetStringValue()
		case int:
			g = int(v.GetIntValue())
		case bool:
			g = v.GetBoolValue()
		}
		if g != w {
			t.Errorf("attribute %s = %v, want %v", k, g, w)
		}
	}
}

const (
	consumerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	consumerParent = "00f067aa0ba902b7"
)

// A run's SERVER span continues the consumer's trace and follows the HTTP
// server conventions; its CLIENT span, the request to the producer, is
// the producer's parent; both carry what the run's report says.
func TestRunSpan(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url, ServiceVersion: "v9.9.9"})
	got := make(chan []string, 1)
	stream := testkit.RunStarted + testkit.ContentEvent + testkit.RunFinished
	core, logs := observer.New(zapcore.InfoLevel)
	h := relaytest.New(t, producerTraceparents(got, stream), func(r *relay.Relay) {
		r.Tap, r.Route, r.RoutePrefix, r.Log = tr.Tap, "agents", "/agent", zap.New(core)
	})
	// Sent twice: the producer still gets one, the relay's.
	tp := "00-" + consumerTrace + "-" + consumerParent + "-01"
	resp := h.Post("/agent?key=secret", testkit.MinimalInput, "Traceparent", tp, "Traceparent", tp, "Tracestate", "vendor=x",
		"User-Agent", "consumer-under-test/1.0")
	if body := testkit.ReadAll(t, resp); body != stream {
		t.Fatalf("stream %q", body)
	}
	rep := h.Report()
	e := rc.span(t, tr)
	var s, c *tracepb.Span
	if e.span.Kind == tracepb.Span_SPAN_KIND_CLIENT {
		c, s = e.span, testkit.Await(t, rc.spans, "no second span").span
	} else {
		s, c = e.span, testkit.Await(t, rc.spans, "no second span").span
	}
	if s.Name != "POST /agent" || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span %q of kind %v, want POST /agent, server", s.Name, s.Kind)
	}
	if hex.EncodeToString(s.TraceId) != consumerTrace || hex.EncodeToString(s.ParentSpanId) != consumerParent {
		t.Errorf("span in trace %x under %x, want the consumer's %s under %s", s.TraceId, s.ParentSpanId, consumerTrace, consumerParent)
	}
	if s.TraceState != "vendor=x" {
		t.Errorf("tracestate %q, want the consumer's", s.TraceState)
	}
	if rep.TraceID != consumerTrace || rep.SpanID != hex.EncodeToString(s.SpanId) {
		t.Errorf("the report's trace %q span %q, want the server span's %s %x", rep.TraceID, rep.SpanID, consumerTrace, s.SpanId)
	}
	if lines := logs.FilterMessage("run").All(); len(lines) != 1 ||
		lines[0].ContextMap()["trace_id"] != consumerTrace || lines[0].ContextMap()["span_id"] != hex.EncodeToString(s.SpanId) {
		t.Errorf("the run's log lines %v, want one with the server span's trace_id and span_id", lines)
	}
	relayHost, relayPort, _ := net.SplitHostPort(strings.TrimPrefix(h.URL, "http://"))
	wantAttrs(t, s, map[string]any{
		tracing.AttrRoute: "agents", tracing.AttrRunID: "r1", tracing.AttrThreadID: "t1",
		tracing.AttrConsumerVersion: "1.0", tracing.AttrConsumerLearnt: "declared",
		tracing.AttrProducerVersion: "1.0", tracing.AttrTranslated: false,
		tracing.AttrEvents: 3, tracing.AttrTerminal: "RUN_FINISHED",
		"http.request.method": "POST", "url.path": "/agent", "http.response.status_code": 200, "http.route": "/agent",
		"url.scheme": "http", "server.address": relayHost, "server.port": atoi(t, relayPort),
		"client.address": "127.0.0.1", "network.peer.address": "127.0.0.1",
		"user_agent.original":    "consumer-under-test/1.0",
		"http.request.body.size": len(testkit.MinimalInput), "http.response.body.size": len(stream),
		tracing.AttrUpstream: h.Producer.URL + "/agent?redacted",
	})
	if p := attrs(s)["network.peer.port"].GetIntValue(); p <= 0 {
		t.Errorf("network.peer.port %d", p)
	}
	for _, k := range []string{tracing.AttrAbort, tracing.AttrProblem, "error.type", tracing.AttrLossyShapes, "agui.relay.bytes"} {
		if _, ok := attrs(s)[k]; ok {
			t.Errorf("attribute %s on a run that went well", k)
		}
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("status %v", s.Status)
	}
	names := eventNames(s)
	if strings.Join(names, ",") != tracing.EventProducerHead+","+tracing.EventFirstEvent+","+tracing.EventTerminalEvent {
		t.Errorf("span events %q", names)
	}
	for _, ev := range s.Events {
		if ev.TimeUnixNano < s.StartTimeUnixNano || ev.TimeUnixNano > s.EndTimeUnixNano {
			t.Errorf("event %s at %d, outside the span (%d to %d)", ev.Name, ev.TimeUnixNano, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
	}

	// The CLIENT span: the producer's request, within the run's.
	if c.Name != "POST" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("client span %q of kind %v, want POST, client", c.Name, c.Kind)
	}
	if !bytes.Equal(c.TraceId, s.TraceId) || !bytes.Equal(c.ParentSpanId, s.SpanId) {
		t.Errorf("client span in trace %x under %x, want the server span's %x under %x", c.TraceId, c.ParentSpanId, s.TraceId, s.SpanId)
	}
	if c.StartTimeUnixNano < s.StartTimeUnixNano || c.EndTimeUnixNano > s.EndTimeUnixNano || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("client span from %d to %d, outside the server span's %d to %d", c.StartTimeUnixNano, c.EndTimeUnixNano, s.StartTimeUnixNano, s.EndTimeUnixNano)
	}
	producerHost, producerPort, _ := net.SplitHostPort(strings.TrimPrefix(h.Producer.URL, "http://"))
	wantAttrs(t, c, map[string]any{"http.request.method": "POST", "server.address": producerHost, "server.port": atoi(t, producerPort),
		"url.full": h.Producer.URL + "/agent?redacted", "http.response.status_code": 200})
	forwarded := testkit.Await(t, got, "no request")
	want := "00-" + consumerTrace + "-" + hex.EncodeToString(c.SpanId) + "-01"
	if len(forwarded) != 1 || forwarded[0] != want {
		t.Errorf("the producer got traceparent %q, want one, %s (the relay's client span)", forwarded, want)
	}
	if n := resourceAttr(e.resource, "service.name"); n != tracing.ServiceName {
		t.Errorf("service.name %q", n)
	}
	if v := resourceAttr(e.resource, "service.version"); v != "v9.9.9" {
		t.Errorf("service.version %q", v)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A run without a trace context starts a trace; a translated run lists
// the shapes it lost, and how the consumer's version was learnt; the
// environment names the collector and the service.
func TestRunSpanNewTraceFromEnvironment(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rc.url+"/v1/traces")
	t.Setenv("OTEL_SERVICE_NAME", "relay-under-test")
	tr := newTracer(t, tracing.Options{})
	got := make(chan []string, 1)
	h := relaytest.New(t, producerTraceparents(got, relaytest.ThinkingStream...), func(r *relay.Relay) { r.Tap = tr.Tap })
	testkit.ReadAll(t, h.Post("/agent", `{"threadId":"t1","runId":"r1","messages":[]}`))
	h.Report()
	e := rc.span(t, tr)
	s, c := e.span, testkit.Await(t, rc.spans, "no second span").span
	if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
		s, c = c, s
	}
	if len(s.ParentSpanId) != 0 {
		t.Errorf("a span without a consumer's context has parent %x", s.ParentSpanId)
	}
	tp := testkit.Await(t, got, "no request")
	if want := "00-" + hex.EncodeToString(s.TraceId) + "-" + hex.EncodeToString(c.SpanId) + "-01"; len(tp) != 1 || tp[0] != want {
		t.Errorf("the producer got traceparent %q, want %s", tp, want)
	}
	wantAttrs(t, s, map[string]any{tracing.AttrConsumerVersion: "0.0.59", tracing.AttrConsumerLearnt: "inferred",
		tracing.AttrProducerVersion: "unknown", tracing.AttrTranslated: true})
	var lossy []string
	for _, v := range attrs(s)[tracing.AttrLossyShapes].GetArrayValue().GetValues() {
		lossy = append(lossy, v.GetStringValue())
	}
	if !slices.Contains(lossy, "THINKING_START.title") {
		t.Errorf("lossy shapes %q, want THINKING_START.title among them", lossy)
	}
	if n := resourceAttr(e.resource, "service.name"); n != "relay-under-test" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", n)
	}
}

// A refused run has a span with its problem type: a 4xx is the consumer's
// error (status unset), a 5xx the relay's side (status error).
func TestRefusedRunSpans(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	h := relaytest.New(t, nil, func(r *relay.Relay) { r.Tap = tr.Tap })
	resp := h.Post("/agent", `{"threadId":1}`, "Traceparent", "00-"+consumerTrace+"-"+consumerParent+"-01")
	if testkit.ReadAll(t, resp); resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	h.Report()
	s := rc.span(t, tr).span
	if hex.EncodeToString(s.TraceId) != consumerTrace {
		t.Errorf("a refused run's span is in trace %x, not the consumer's", s.TraceId)
	}
	wantAttrs(t, s, map[string]any{tracing.AttrProblem: relay.ProblemInvalidInput, "error.type": relay.ProblemInvalidInput,
		"http.response.status_code": 400})
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("a 400's status %v, want unset", s.Status)
	}

	// A producer that cannot be reached: a relay of its own.
	h2 := relaytest.New(t, nil, func(r *relay.Relay) { r.Tap, r.Upstream = tr.Tap, testkit.ClosedURL(t) })
	resp = h2.Post("/agent", testkit.MinimalInput)
	if testkit.ReadAll(t, resp); resp.StatusCode != 502 {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	h2.Report()
	s, c := rc.pair(t, tr, 2)
	wantAttrs(t, s, map[string]any{tracing.AttrProblem: relay.ProblemUnreachable, "http.response.status_code": 502})
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.GetMessage() != relay.ProblemUnreachable {
		t.Errorf("a 502's status %v, want error", s.Status)
	}
	// The producer's request failed: no status of its own.
	wantAttrs(t, c, map[string]any{"error.type": relay.ProblemUnreachable})
	if _, ok := attrs(c)["http.response.status_code"]; ok || c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the client span of an unreachable producer: status %v, attributes %v", c.Status, attrs(c))
	}
}

// A run over its route's body limit (below the server's, which another
// route sets) is refused with 413, and has a span saying so: its End
// comes before the answer is sent.
func TestTooLargeRunSpan(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	small := &relay.Relay{Upstream: testkit.ClosedURL(t), Route: "small", MaxBody: 16, Tap: tr.Tap}
	other := &relay.Relay{Upstream: testkit.ClosedURL(t), MaxBody: 1 << 20}
	table, err := relay.NewTable([]relay.Route{{Name: "small", Prefix: "/small", Relay: small}, {Name: "other", Prefix: "/", Relay: other}})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + testkit.Serve(t, relay.NewRouter(table, 0, nil).Server(), relay.Listener)
	resp := testkit.Post(t, testkit.Consumer(t), url+"/small/agent", testkit.MinimalInput)
	if testkit.ReadAll(t, resp); resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	s := rc.span(t, tr).span
	wantAttrs(t, s, map[string]any{tracing.AttrProblem: "urn:agui-relay:body-too-large", "http.response.status_code": 413,
		tracing.AttrRoute: "small", "url.path": "/small/agent"})
}

// A producer that does not answer in time: 504, an error on the span.
func TestTimedOutRunSpan(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	release := make(chan struct{})
	defer close(release)
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		select { // never answers within the relay's first-byte timeout
		case <-release:
		case <-r.Context().Done():
		}
	}, func(r *relay.Relay) {
		r.Tap = tr.Tap
		r.Client = relay.NewClient(relay.ClientOptions{FirstByteTimeout: 50 * time.Millisecond})
	})
	resp := h.Post("/agent", testkit.MinimalInput)
	if testkit.ReadAll(t, resp); resp.StatusCode != 504 {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	h.Report()
	s, c := rc.pair(t, tr, 2)
	wantAttrs(t, c, map[string]any{"error.type": relay.ProblemUpstreamTimeout})
	wantAttrs(t, s, map[string]any{tracing.AttrProblem: relay.ProblemUpstreamTimeout, "http.response.status_code": 504,
		tracing.AttrConsumerVersion: "1.0", tracing.AttrRunID: "r1"})
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a 504's status %v, want error", s.Status)
	}
	if names := eventNames(s); len(names) != 0 {
		t.Errorf("span events %q on a run that never streamed", names)
	}
}

// A stream the relay ends with a RUN_ERROR of its own is an error, with
// the RUN_ERROR's code.
func TestRunErrorSpan(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		panic(http.ErrAbortHandler) // the stream breaks mid-run
	}, func(r *relay.Relay) { r.Tap = tr.Tap })
	body := testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput))
	if !strings.Contains(body, `"code":"upstream_broken"`) {
		t.Fatalf("stream %q, want the relay's RUN_ERROR", body)
	}
	h.Report()
	s, c := rc.pair(t, tr, 2)
	wantAttrs(t, c, map[string]any{"error.type": relay.CodeUpstreamBroken, "http.response.status_code": 200})
	wantAttrs(t, s, map[string]any{tracing.AttrAbort: relay.CodeUpstreamBroken, "error.type": relay.CodeUpstreamBroken,
		tracing.AttrTerminal: "RUN_ERROR", tracing.AttrEvents: 2})
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.GetMessage() != relay.CodeUpstreamBroken {
		t.Errorf("status %v, want error upstream_broken", s.Status)
	}
	if names := eventNames(s); !slices.Contains(names, tracing.EventTerminalEvent) || !slices.Contains(names, "exception") {
		t.Errorf("span events %q, want the terminal event and the exception that broke the stream", names)
	}
}

// A request that is not a run has a SERVER span and a CLIENT span too
// (Relay.RequestTap), without the AG-UI attributes; the producer's parent
// is the client span.
func TestProxiedRequestSpans(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	got := make(chan []string, 1)
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values("Traceparent")
		io.WriteString(w, `{"capabilities":{}}`) //nolint:errcheck
	}, func(r *relay.Relay) {
		r.Tap, r.RequestTap, r.Route, r.RoutePrefix = tr.Tap, tr.RequestTap, "agents", "/agent"
	})
	tp := "00-" + consumerTrace + "-" + consumerParent + "-01"
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/agent/capabilities?token=secret", nil)
	req.Header.Set("Traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := testkit.ReadAll(t, resp); body != `{"capabilities":{}}` {
		t.Fatalf("response %q", body)
	}
	s, c := rc.pair(t, tr, 2)
	if s.Name != "GET /agent" || hex.EncodeToString(s.TraceId) != consumerTrace || hex.EncodeToString(s.ParentSpanId) != consumerParent {
		t.Errorf("server span %q in trace %x under %x, want GET /agent under the consumer's", s.Name, s.TraceId, s.ParentSpanId)
	}
	wantAttrs(t, s, map[string]any{"http.request.method": "GET", "url.path": "/agent/capabilities", "http.route": "/agent",
		"http.response.status_code": 200, "url.scheme": "http", "client.address": "127.0.0.1", tracing.AttrRoute: "agents"})
	for _, k := range []string{tracing.AttrRunID, tracing.AttrEvents, tracing.AttrConsumerVersion, tracing.AttrProducerVersion} {
		if _, ok := attrs(s)[k]; ok {
			t.Errorf("attribute %s on a request that is not a run", k)
		}
	}
	if !bytes.Equal(c.ParentSpanId, s.SpanId) || c.Name != "GET" {
		t.Errorf("client span %q under %x, want GET under the server span %x", c.Name, c.ParentSpanId, s.SpanId)
	}
	wantAttrs(t, c, map[string]any{"url.full": h.Producer.URL + "/agent/capabilities?redacted", "http.response.status_code": 200})
	if v := testkit.Await(t, got, "no request"); len(v) != 1 || v[0] != "00-"+consumerTrace+"-"+hex.EncodeToString(c.SpanId)+"-01" {
		t.Errorf("the producer got traceparent %q, want the client span's", v)
	}
}

// Off (the default), the relay has no tracing tap: the producer gets the
// consumer's headers as they were, none added, and nothing is exported.
func TestOffAddsNothing(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	// A collector named, but the exporter is none.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	tr, err := tracing.New(context.Background(), tracing.Options{})
	if tr != nil || err != nil {
		t.Fatalf("New = %v, %v; want nil, nil", tr, err)
	}
	got := make(chan []string, 2)
	h := relaytest.New(t, producerTraceparents(got, testkit.RunStarted+testkit.RunFinished), func(r *relay.Relay) { r.Tap, r.RequestTap = tr.Tap, tr.RequestTap })
	testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput))
	h.Report()
	if v := testkit.Await(t, got, "no request"); len(v) != 0 {
		t.Errorf("the producer got traceparent %q, want none", v)
	}
	tp := "00-" + consumerTrace + "-" + consumerParent + "-01"
	testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput, "Traceparent", tp))
	h.Report()
	if v := testkit.Await(t, got, "no request"); len(v) != 1 || v[0] != tp {
		t.Errorf("the producer got traceparent %q, want the consumer's", v)
	}
	// A request that is not a run: its traceparent untouched too.
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/agent/capabilities", nil)
	req.Header.Set("Traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ReadAll(t, resp)
	if v := testkit.Await(t, got, "no request"); len(v) != 1 || v[0] != tp {
		t.Errorf("a request that is not a run: the producer got traceparent %q, want the consumer's", v)
	}
	rc.none(t)
}

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    tracing.Options
		env     map[string]string
		on      bool
		errPart string
	}{
		{name: "nothing set"},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true},
		{name: "exporter otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{name: "exporter none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{name: "flag", opts: tracing.Options{Endpoint: "http://c:4318"}, on: true},
		{name: "flag over none", opts: tracing.Options{Endpoint: "http://c:4318"}, env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, on: true},
		{name: "flag not a URL", opts: tracing.Options{Endpoint: "c:4318"}, errPart: "base URL"},
		{name: "zipkin", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, errPart: "otlp or none"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		{name: "grpc but off", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{name: "unknown protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, errPart: "grpc, http/protobuf"},
		{name: "endpoint not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, errPart: "OTEL_EXPORTER_OTLP_ENDPOINT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			on, err := tracing.Enabled(c.opts, func(k string) string { return c.env[k] })
			if c.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), c.errPart) {
					t.Errorf("err %v, want one saying %q", err, c.errPart)
				}
				return
			}
			if err != nil || on != c.on {
				t.Errorf("Enabled = %v, %v; want %v", on, err, c.on)
			}
		})
	}
}

// The destination of the spans as the specification's exporter
// configuration gives it, defaults included.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name string
		opts tracing.Options
		env  map[string]string
		want tracing.Destination
	}{
		{name: "otlp alone: the specification's default, plain HTTP", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			want: tracing.Destination{Endpoint: "http://localhost:4318/v1/traces", Protocol: "http/protobuf"}},
		{name: "grpc alone", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: tracing.Destination{Endpoint: "http://localhost:4317", Protocol: "grpc"}},
		{name: "base endpoint over HTTP", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318/"},
			want: tracing.Destination{Endpoint: "https://c:4318/v1/traces", Protocol: "http/protobuf"}},
		{name: "base endpoint over gRPC", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: tracing.Destination{Endpoint: "http://c:4317", Protocol: "grpc"}},
		{name: "traces protocol over the general one", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			want: tracing.Destination{Endpoint: "http://localhost:4318/v1/traces", Protocol: "http/protobuf"}},
		{name: "http/json: sent as protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			want: tracing.Destination{Endpoint: "http://localhost:4318/v1/traces", Protocol: "http/protobuf"}},
		{name: "traces endpoint as it is, over the base", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9999/x"},
			want: tracing.Destination{Endpoint: "http://b:9999/x", Protocol: "http/protobuf"}},
		{name: "the flag over both", opts: tracing.Options{Endpoint: "http://f:4318"}, env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9999/x"},
			want: tracing.Destination{Endpoint: "http://f:4318/v1/traces", Protocol: "http/protobuf"}},
		{name: "the flag over gRPC", opts: tracing.Options{Endpoint: "http://f:4317"}, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: tracing.Destination{Endpoint: "http://f:4317", Protocol: "grpc"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tracing.Resolve(c.opts, func(k string) string { return c.env[k] })
			if err != nil || got != c.want {
				t.Errorf("Resolve = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestSampler(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if s := tracing.Sampler(getenv); s != "parentbased_always_on" {
		t.Errorf("default sampler %q", s)
	}
	env["OTEL_TRACES_SAMPLER"], env["OTEL_TRACES_SAMPLER_ARG"] = "parentbased_traceidratio", "0.25"
	if s := tracing.Sampler(getenv); s != "parentbased_traceidratio:0.25" {
		t.Errorf("sampler %q", s)
	}
}

// A method semconv does not know is _OTHER, its span named HTTP; without a
// route prefix the name is the method alone. Behind a proxy, the scheme,
// host and client are those it forwards, the peer the proxy.
func TestSpanNamesAndForwardedRequest(t *testing.T) {
	cleanEnv(t)
	rc := newReceiver(t)
	tr := newTracer(t, tracing.Options{Endpoint: rc.url})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {}, func(r *relay.Relay) { r.Tap, r.RequestTap = tr.Tap, tr.RequestTap })
	req, _ := http.NewRequest("PROPFIND", h.URL+"/agent/x", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", "chat.example.com")
	req.Header.Set("X-Forwarded-For", "203.0.113.7, 10.0.0.2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ReadAll(t, resp)
	s, c := rc.pair(t, tr, 2)
	if s.Name != "HTTP" || c.Name != "HTTP" {
		t.Errorf("spans %q and %q, want HTTP", s.Name, c.Name)
	}
	wantAttrs(t, s, map[string]any{"http.request.method": "_OTHER", "http.request.method_original": "PROPFIND",
		"url.scheme": "https", "server.address": "chat.example.com", "server.port": 443,
		"client.address": "203.0.113.7", "network.peer.address": "127.0.0.1"})
	if _, ok := attrs(s)["http.route"]; ok {
		t.Errorf("http.route on a relay without a route")
	}

	testkit.ReadAll(t, h.Post("/agent", `{"threadId":1}`))
	h.Report()
	if s, _ := rc.pair(t, tr, 1); s.Name != "POST" {
		t.Errorf("span %q, want POST", s.Name)
	}
}
