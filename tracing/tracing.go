// Package tracing exports the OpenTelemetry spans of the relay's runs, over
// OTLP (gRPC or HTTP), as a tap of the relay's (relay.RunTap, beside metrics and
// recordings). A run's SERVER span continues the consumer's W3C trace
// context; its CLIENT span, the request to the producer, is passed to the
// producer as the parent of its own spans (traceparent on the forwarded
// request, see relay.HeaderTap). Tracing is off unless configured: New
// then returns nil, and the relay has no tap of it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agui-relay/agui-relay/relay"
)

// Options configure a Tracer beyond the OTEL_* environment variables.
type Options struct {
	// Endpoint is the base URL of an OTLP/HTTP collector
	// ("http://collector:4318"), spans going to its /v1/traces, as
	// OTEL_EXPORTER_OTLP_ENDPOINT says it (--otlp-endpoint). Set, it turns
	// tracing on and wins over the environment's endpoints.
	Endpoint string
	// ServiceVersion is the relay's version, the service.version of its
	// spans; empty leaves it out.
	ServiceVersion string
}

// Tracer makes and exports the spans of a relay's runs. Its Tap is a
// Relay.Tap; Shutdown exports what is left.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
	dest     Destination
	sampler  string
	// serverKind and clientKind are the spans' kinds as options, made
	// once: an option made per span is an allocation.
	serverKind, clientKind trace.SpanStartOption
	cache                  spanCache
}

// spanCache holds what the spans of a route's runs share, made once rather
// than per run: the SERVER span's names (by method and route prefix) and
// what a producer's URL gives (redacted, its host and port). Each map
// holds spanCacheSize entries at most, for a relay whose consumers send
// many paths or queries; past that, what is missing is made per run.
type spanCache struct {
	mu        sync.RWMutex
	names     map[[2]string]string
	upstreams map[string]*upstream
}

const spanCacheSize = 256

// upstream is what a producer's URL gives its spans.
type upstream struct {
	redacted string // its credentials and query redacted (redact.URL)
	full     string // url.full: redacted, "" when the URL has no host
	addr     string // server.address, "" when it has none
	port     int
}

// ServiceName is the service.name of the relay's spans unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another.
const ServiceName = "agui-relay"

// Enabled reports whether tracing is configured: by opts.Endpoint, or by
// the environment as an OpenTelemetry SDK reads it, and what is wrong with
// a configuration the relay cannot follow. It is on when opts.Endpoint is
// set, or OTEL_TRACES_EXPORTER is otlp, or (OTEL_TRACES_EXPORTER unset) an
// OTLP endpoint is (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_ENDPOINT); OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off. Another exporter is an error, not
// silence.
func Enabled(opts Options, getenv func(string) string) (bool, error) {
	if opts.Endpoint != "" {
		if err := checkEndpoint(opts.Endpoint); err != nil {
			return false, err
		}
		_, err := Resolve(opts, getenv)
		return true, err
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	on := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	if exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporters != "" {
		on = false
		for e := range strings.SplitSeq(exporters, ",") {
			switch e = strings.TrimSpace(e); e {
			case "otlp":
				on = true
			case "none":
				return false, nil
			default:
				return false, fmt.Errorf("OTEL_TRACES_EXPORTER %q: the relay exports otlp or none", e)
			}
		}
	}
	if !on {
		return false, nil
	}
	_, err := Resolve(opts, getenv)
	return true, err
}

func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want the collector's base URL, http://host:4318", s)
	}
	return nil
}

// Destination is where a Tracer's spans go.
type Destination struct {
	// Endpoint is the URL the spans are sent to: the collector's
	// /v1/traces over HTTP, the collector's address over gRPC.
	Endpoint string
	// Protocol is the OTLP protocol they are sent with: grpc or
	// http/protobuf (the one the SDK's HTTP exporter sends; a collector
	// that receives http/json receives it on the same endpoint).
	Protocol string
}

// The OTLP protocols.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Resolve returns the destination of the spans as the OpenTelemetry
// specification's exporter configuration gives it: the protocol of
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf; the endpoint of opts.Endpoint or
// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL, /v1/traces appended over HTTP),
// else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as it is), else the
// specification's default, http://localhost:4318/v1/traces or
// http://localhost:4317 (the Go SDK's default is https, which a local
// collector does not speak: open-telemetry/opentelemetry-go#4803).
func Resolve(opts Options, getenv func(string) string) (Destination, error) {
	var d Destination
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := strings.TrimSpace(getenv(protoVar))
	if p == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(getenv(protoVar))
	}
	switch p {
	case "", "http/protobuf", "http/json":
		d.Protocol = ProtocolHTTP
	case "grpc":
		d.Protocol = ProtocolGRPC
	default:
		return d, fmt.Errorf("%s %q: the relay exports over grpc, http/protobuf or http/json", protoVar, p)
	}
	base, baseVar := opts.Endpoint, "--otlp-endpoint"
	traces := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if base == "" && traces == "" {
		base, baseVar = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	switch {
	case base != "":
		if err := checkURL(baseVar, base); err != nil {
			return d, err
		}
		d.Endpoint = base
		if d.Protocol == ProtocolHTTP {
			d.Endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	case traces != "":
		d.Endpoint = traces
		if err := checkURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", d.Endpoint); err != nil {
			return d, err
		}
	case d.Protocol == ProtocolGRPC:
		d.Endpoint = "http://localhost:4317"
	default:
		d.Endpoint = "http://localhost:4318/v1/traces"
	}
	return d, nil
}

// checkURL says what is wrong with the endpoint URL of name.
func checkURL(name, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want a URL, http://host:port", name, s)
	}
	return nil
}

// Sampler names the sampler of the spans as OTEL_TRACES_SAMPLER does (the
// SDK reads it, and OTEL_TRACES_SAMPLER_ARG): parentbased_always_on when
// it is unset, the specification's default.
func Sampler(getenv func(string) string) string {
	s := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	if s == "" {
		return "parentbased_always_on"
	}
	if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
		s += ":" + arg
	}
	return s
}

// New returns a Tracer exporting to the collector that opts and the OTEL_*
// environment name (see Enabled, Resolve), or nil when tracing is not
// configured. The exporter reads the rest of its settings from the
// environment as the OpenTelemetry SDK does (OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE; OTEL_TRACES_SAMPLER; OTEL_BSP_*),
// and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	on, err := Enabled(opts, os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	dest, err := Resolve(opts, os.Getenv)
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	if dest.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(dest.Endpoint))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(dest.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", ServiceName)}
	if opts.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", opts.ServiceVersion))
	}
	// Later detectors win: the environment's names over the default.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("the trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(exp, batchOptions(os.Getenv))), sdktrace.WithResource(res))
	return newTracer(tp, dest, Sampler(os.Getenv)), nil
}

// newTracer returns a Tracer making its spans with tp.
func newTracer(tp *sdktrace.TracerProvider, dest Destination, sampler string) *Tracer {
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/agui-relay/agui-relay/tracing"),
		dest: dest, sampler: sampler,
		serverKind: trace.WithSpanKind(trace.SpanKindServer), clientKind: trace.WithSpanKind(trace.SpanKindClient),
		cache: spanCache{names: map[[2]string]string{}, upstreams: map[string]*upstream{}}}
}

// Destination is where the spans go.
func (t *Tracer) Destination() Destination { return t.dest }

// Sampler names the spans' sampler (see Sampler).
func (t *Tracer) Sampler() string { return t.sampler }

// ForceFlush exports the spans of the runs that ended so far.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown exports the spans left and stops the exporter; runs that end
// later are not exported. A nil Tracer has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Tap is a Relay.Tap: the span of the run rep reports. A nil Tracer (off)
// taps nothing.
func (t *Tracer) Tap(rep *relay.RunReport) relay.RunTap {
	if t == nil {
		return nil
	}
	return &runTap{t: t, rep: rep}
}

// RequestTap is a Relay.RequestTap: the span of a request that is not a
// run (GET /agent/capabilities), and of its request to the producer. A
// nil Tracer (off) taps nothing.
func (t *Tracer) RequestTap(rep *relay.RunReport) relay.RequestTap {
	if t == nil {
		return nil
	}
	return &runTap{t: t, rep: rep, proxied: true}
}
