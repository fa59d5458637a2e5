// Package tracing exports one OpenTelemetry span per run of the relay, over
// OTLP/HTTP, as a tap of the relay's (relay.RunTap, beside metrics and
// recordings). The span continues the consumer's W3C trace context and is
// passed to the producer as the parent of its own spans (traceparent on the
// forwarded request, see relay.HeaderTap). Tracing is off unless configured:
// New then returns nil, and the relay has no tap of it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
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
// OTEL_TRACES_EXPORTER=none turn it off. The relay exports OTLP over HTTP
// only: another exporter or the grpc protocol is an error, not silence.
func Enabled(opts Options, getenv func(string) string) (bool, error) {
	if opts.Endpoint != "" {
		if err := checkEndpoint(opts.Endpoint); err != nil {
			return false, err
		}
		return true, checkProtocol(getenv)
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
				return false, fmt.Errorf("OTEL_TRACES_EXPORTER %q: the relay exports otlp (over HTTP) or none", e)
			}
		}
	}
	if !on {
		return false, nil
	}
	return true, checkProtocol(getenv)
}

func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want the collector's base URL, http://host:4318", s)
	}
	return nil
}

// checkProtocol refuses an OTLP protocol the HTTP exporter does not speak.
func checkProtocol(getenv func(string) string) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := getenv(name); p {
		case "", "http/protobuf", "http/json":
		default:
			return fmt.Errorf("%s %q: the relay exports over http/protobuf or http/json", name, p)
		}
	}
	return nil
}

// New returns a Tracer exporting to the collector that opts and the OTEL_*
// environment name (see Enabled), or nil when tracing is not configured.
// The exporter reads the rest of its settings from the environment as the
// OpenTelemetry SDK does (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE; OTEL_TRACES_SAMPLER; OTEL_BSP_*), and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	on, err := Enabled(opts, os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	var eopts []otlptracehttp.Option
	if opts.Endpoint != "" {
		eopts = append(eopts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(opts.Endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
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
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/agui-relay/agui-relay/tracing")}, nil
}

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
