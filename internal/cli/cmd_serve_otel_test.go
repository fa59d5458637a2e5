package cli

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/proto"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

func TestServeOTLPEndpointFlag(t *testing.T) {
	env := map[string]string{"AGUI_RELAY_OTLP_ENDPOINT": "http://collector:4318"}
	c, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || c.otlpEndpoint != "http://collector:4318" {
		t.Fatalf("otlp endpoint %q, %v", c.otlpEndpoint, err)
	}
	if c, err := parseServe(nil, func(string) string { return "" }, io.Discard); err != nil || c.otlpEndpoint != "" {
		t.Errorf("default otlp endpoint %q, %v; want none (off)", c.otlpEndpoint, err)
	}
	if _, err := parseServe([]string{"--otlp-endpoint", "collector:4318"}, func(string) string { return "" }, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--otlp-endpoint") {
		t.Errorf("an endpoint that is not a URL: %v", err)
	}
	bad := map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}
	if _, err := parseServe(nil, func(k string) string { return bad[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("an exporter the relay lacks: %v", err)
	}
}

// serve with --otlp-endpoint exports a span per run, the consumer's trace
// continued, and sends the last ones at shutdown.
func TestServeExportsRunSpans(t *testing.T) {
	spans := make(chan *tracepb.Span, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil || r.URL.Path != "/v1/traces" {
			t.Errorf("export to %s: %v", r.URL.Path, err)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans <- s
				}
			}
		}
	}))
	defer collector.Close()
	at, cancel, done := startServe(t, func(c *serveConfig) { c.otlpEndpoint = collector.URL })
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	resp := testkit.Post(t, http.DefaultClient, "http://"+at.relay+"/agent", `{"threadId":"t1","runId":"run-7","protocolVersion":"1.0","messages":[]}`,
		"Traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	testkit.ReadAll(t, resp)
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := testkit.Await(t, done, "serve did not stop"); err != nil {
		t.Fatal(err)
	}
	s := testkit.Await(t, spans, "no span exported by the shutdown")
	if s.Kind == tracepb.Span_SPAN_KIND_CLIENT { // the producer's request's, ended first
		s = testkit.Await(t, spans, "no second span exported by the shutdown")
	}
	// The default route's prefix is its http.route.
	if s.Name != "POST /" || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span %q of kind %v, want the run's, POST /", s.Name, s.Kind)
	}
	if hex.EncodeToString(s.TraceId) != trace {
		t.Errorf("span in trace %x, want the consumer's", s.TraceId)
	}
	var runID string
	for _, kv := range s.Attributes {
		if kv.Key == "agui.run_id" {
			runID = kv.Value.GetStringValue()
		}
	}
	if runID != "run-7" {
		t.Errorf("span %q has runId %q", s.Name, runID)
	}
}

// The start-up line says whether traces are on, where they go (endpoint
// and protocol) and the sampler.
func TestServeLogsWhereTracesGo(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want map[string]any
	}{
		{name: "off", env: map[string]string{"OTEL_TRACES_EXPORTER": "", "OTEL_EXPORTER_OTLP_PROTOCOL": ""}, want: map[string]any{"traces": "off"}},
		{name: "grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: map[string]any{"traces": "otlp", "traces_endpoint": "http://localhost:4317", "traces_protocol": "grpc", "traces_sampler": "parentbased_always_on"}},
		{name: "http", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": ""},
			want: map[string]any{"traces": "otlp", "traces_endpoint": "http://localhost:4318/v1/traces", "traces_protocol": "http/protobuf"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := parseServe([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--demo-pace", "0"}, os.Getenv, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zapcore.InfoLevel)
			startServeLogged(t, cfg, zap.New(core))
			lines := logs.FilterMessage("agui-relay listening").All()
			if len(lines) != 1 {
				t.Fatalf("%d start-up lines", len(lines))
			}
			got := lines[0].ContextMap()
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}
