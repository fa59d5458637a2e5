package tracing

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agui-relay/agui-relay/internal/redact"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/translate"
)

// SpanName is the name of a run's span.
const SpanName = "agui.relay.run"

// The attributes of a run's span besides the HTTP ones of the semantic
// conventions (http.request.method, url.path, http.response.status_code,
// error.type).
const (
	AttrRoute           = "agui.relay.route"
	AttrRunID           = "agui.run_id"
	AttrThreadID        = "agui.thread_id"
	AttrConsumerVersion = "agui.relay.consumer.version"
	AttrConsumerLearnt  = "agui.relay.consumer.learnt" // declared, configured, inferred
	AttrProducerVersion = "agui.relay.producer.version"
	AttrProducerPython  = "agui.relay.producer.python"
	AttrUpstream        = "agui.relay.upstream" // the producer's URL, its credentials and query redacted
	AttrTranslated      = "agui.relay.translated"
	AttrUntranslated    = "agui.relay.untranslated" // why a successful answer passed unread
	AttrEvents          = "agui.relay.events"
	AttrBytes           = "agui.relay.bytes"
	AttrTerminal        = "agui.relay.terminal"     // RUN_FINISHED, RUN_ERROR
	AttrLossyShapes     = "agui.relay.lossy_shapes" // the shapes a translation lost
	AttrAbort           = "agui.relay.abort"        // the code of the relay's own RUN_ERROR, or consumer_gone/consumer_stalled
	AttrProblem         = "agui.relay.problem"      // the problem type of a refused run
)

// The events of a run's span.
const (
	EventProducerHead  = "agui.relay.producer_head"  // the producer answered with an event stream
	EventFirstEvent    = "agui.relay.first_event"    // the first event was flushed to the consumer
	EventTerminalEvent = "agui.relay.terminal_event" // the flush that took the stream's last event, the terminal one
)

// runTap makes the span of one run. The relay calls it one method at a
// time (relay.RunTap).
type runTap struct {
	t    *Tracer
	rep  *relay.RunReport
	ctx  context.Context // the span's
	span trace.Span
	// events is the count of events flushed so far; lastEventAt when the
	// count last grew.
	events      int
	lastEventAt time.Time
	lossy       []string
}

var _ relay.HeaderTap = (*runTap)(nil)

// ConsumerHeaders starts the span, at the run's start, as a child of the
// consumer's trace context when it sent one.
func (r *runTap) ConsumerHeaders(h *fasthttp.RequestHeader) {
	r.start(r.t.prop.Extract(context.Background(), consumerCarrier{h}), h)
}

func (r *runTap) start(parent context.Context, h *fasthttp.RequestHeader) {
	attrs := make([]attribute.KeyValue, 0, 2)
	if h != nil {
		path, _, _ := bytes.Cut(h.RequestURI(), []byte("?")) // the query may carry secrets
		attrs = append(attrs, attribute.String("http.request.method", string(h.Method())), attribute.String("url.path", string(path)))
	}
	r.ctx, r.span = r.t.tracer.Start(parent, SpanName, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(r.rep.Start), trace.WithAttributes(attrs...))
}

// ProducerHeaders sets the run's span as the parent of the producer's:
// traceparent (and tracestate), in place of the consumer's.
func (r *runTap) ProducerHeaders(h *fasthttp.RequestHeader) {
	if r.span == nil {
		return
	}
	// The consumer's tracestate belongs to its traceparent: the span's
	// (inherited from it when the span continues it) is set instead.
	h.Del("Tracestate")
	r.t.prop.Inject(r.ctx, producerCarrier{h})
}

func (*runTap) Received([]byte)                       {}
func (*runTap) Forwarded(negotiate.InputPlan, []byte) {}
func (*runTap) Read([]byte)                           {}
func (*runTap) Wrote([]byte)                          {}
func (*runTap) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {
}

func (r *runTap) Streaming(negotiate.Version, negotiate.Version) {
	if r.span != nil {
		r.span.AddEvent(EventProducerHead)
	}
}

func (r *runTap) Flushed(events int) {
	if events <= r.events || r.span == nil {
		return
	}
	r.lastEventAt = time.Now()
	if r.events == 0 {
		r.span.AddEvent(EventFirstEvent, trace.WithTimestamp(r.lastEventAt))
	}
	r.events = events
}

func (r *runTap) Warned(w translate.Warning) {
	if !slices.Contains(r.lossy, w.Shape) {
		r.lossy = append(r.lossy, w.Shape)
	}
}

// End sets what the report says of the run on its span, and ends it.
func (r *runTap) End(rep *relay.RunReport) {
	if r.span == nil {
		r.start(context.Background(), nil)
	}
	s := r.span
	attrs := make([]attribute.KeyValue, 0, 20)
	if rep.Route != "" {
		attrs = append(attrs, attribute.String(AttrRoute, rep.Route))
	}
	if rep.RunID != "" {
		attrs = append(attrs, attribute.String(AttrRunID, rep.RunID))
	}
	if rep.ThreadID != "" {
		attrs = append(attrs, attribute.String(AttrThreadID, rep.ThreadID))
	}
	if rep.ConsumerLearnt != negotiate.NotLearnt {
		attrs = append(attrs, attribute.String(AttrConsumerVersion, rep.Consumer.String()),
			attribute.String(AttrConsumerLearnt, rep.ConsumerLearnt.String()))
	}
	if rep.URL != "" {
		attrs = append(attrs, attribute.String(AttrUpstream, redact.URL(rep.URL)))
	}
	if !rep.ProducerPython.IsZero() {
		attrs = append(attrs, attribute.String(AttrProducerPython, rep.ProducerPython.Name()))
	}
	if rep.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", rep.Status))
	}
	if rep.Problem == "" && rep.Status >= 200 && rep.Status <= 299 {
		// Answered: the producer's side of the run.
		attrs = append(attrs, attribute.String(AttrProducerVersion, relay.VersionLabel(rep.Producer)),
			attribute.Bool(AttrTranslated, rep.Translated),
			attribute.Int(AttrEvents, rep.Events), attribute.Int(AttrBytes, rep.Bytes))
	}
	if rep.Untranslated != "" {
		attrs = append(attrs, attribute.String(AttrUntranslated, rep.Untranslated))
	}
	if rep.Terminal != "" {
		attrs = append(attrs, attribute.String(AttrTerminal, rep.Terminal))
		if !r.lastEventAt.IsZero() {
			s.AddEvent(EventTerminalEvent, trace.WithTimestamp(r.lastEventAt), trace.WithAttributes(attribute.String("type", rep.Terminal)))
		}
	}
	if len(r.lossy) > 0 {
		attrs = append(attrs, attribute.StringSlice(AttrLossyShapes, r.lossy))
	}
	switch {
	case rep.Problem != "":
		attrs = append(attrs, attribute.String(AttrProblem, rep.Problem), attribute.String("error.type", rep.Problem))
		if rep.Status >= 500 {
			s.SetStatus(codes.Error, rep.Problem)
		}
	case rep.Abort == relay.CodeConsumerGone || rep.Abort == relay.CodeConsumerStalled:
		// The consumer's doing: no RUN_ERROR was written, nothing failed here.
		attrs = append(attrs, attribute.String(AttrAbort, rep.Abort))
	case rep.Abort != "":
		// The relay ended the stream with a RUN_ERROR of its own.
		attrs = append(attrs, attribute.String(AttrAbort, rep.Abort), attribute.String("error.type", rep.Abort))
		s.SetStatus(codes.Error, rep.Abort)
		if rep.Err != nil {
			s.RecordError(rep.Err)
		}
	case rep.Status >= 500:
		s.SetStatus(codes.Error, "")
	}
	s.SetAttributes(attrs...)
	end := rep.Start.Add(rep.Duration)
	if rep.Duration <= 0 {
		end = time.Now()
	}
	s.End(trace.WithTimestamp(end))
}

// consumerCarrier reads the trace context of the consumer's request.
type consumerCarrier struct{ h *fasthttp.RequestHeader }

func (c consumerCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (consumerCarrier) Set(string, string)      {}
func (consumerCarrier) Keys() []string          { return nil }

// producerCarrier sets the trace context of the producer's request.
type producerCarrier struct{ h *fasthttp.RequestHeader }

func (producerCarrier) Get(string) string { return "" }

// Set replaces every line of key (a consumer may have sent several, and
// fasthttp's Set replaces the first).
func (c producerCarrier) Set(key, value string) {
	c.h.Del(key)
	c.h.Set(key, value)
}

func (producerCarrier) Keys() []string { return nil }
