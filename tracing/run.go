package tracing

import (
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agui-relay/agui-relay/internal/redact"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/translate"
)

// The attributes of a run's span besides the HTTP ones of the semantic
// conventions (semconv; http.request.method, url.path, http.route,
// http.response.status_code, error.type and the rest).
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
	AttrUntranslated    = "agui.relay.untranslated" // why a successful response passed unread
	AttrEvents          = "agui.relay.events"
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

// runTap makes the spans of one run, or of one request that is not a run
// (proxied): the SERVER span of the consumer's request and the CLIENT
// span of the producer's, its child. The relay calls it one method at a
// time (relay.RunTap, relay.RequestTap).
type runTap struct {
	t       *Tracer
	rep     *relay.RunReport
	proxied bool            // a request that is not a run: no AG-UI attributes
	ctx     context.Context // the SERVER span's
	span    trace.Span
	client  trace.Span // the producer's request, from ProducerHeaders
	// method is the consumer's http.request.method (invalid when none
	// came), name its span name: the method, "HTTP" for one semconv does
	// not know.
	method attribute.KeyValue
	name   string
	// reqBody is the request body's size, -1 while unknown.
	reqBody int
	// events is the count of events flushed so far; lastEventAt when the
	// count last grew; lastRead when the producer's stream was last read.
	events      int
	lastEventAt time.Time
	lastRead    time.Time
	lossy       []string
	// attrs holds the attributes of a span as they are made, set on it
	// once: the SERVER span's (startAttrs those made at its start, the
	// rest appended at its end), then the CLIENT span's. The SDK copies
	// what it is given: a run's attributes need no allocation of their own.
	attrs      [32]attribute.KeyValue
	startAttrs []attribute.KeyValue
}

var _ relay.HeaderTap = (*runTap)(nil)
var _ relay.RequestTap = (*runTap)(nil)

// ConsumerHeaders starts the SERVER span, at the request's start, as a
// child of the consumer's trace context when it sent one.
func (r *runTap) ConsumerHeaders(h *fasthttp.RequestHeader) {
	r.start(r.t.prop.Extract(context.Background(), consumerCarrier{h}), h)
}

func (r *runTap) start(parent context.Context, h *fasthttp.RequestHeader) {
	r.reqBody = -1
	attrs := r.attrs[:0]
	r.name = "HTTP" // semconv's name for a request of no known method
	if h != nil {
		r.method, r.name = methodAttr(h.Method(), &attrs)
		attrs = append(attrs, r.method)
		path, _, _ := bytes.Cut(h.RequestURI(), []byte("?")) // the query may carry secrets
		attrs = append(attrs, semconv.URLPath(string(path)))
		attrs = serverAttrs(attrs, h, r.rep.Peer)
		if n := h.ContentLength(); n >= 0 {
			r.reqBody = n
		}
	}
	name := r.name
	if p := r.rep.RoutePrefix; p != "" {
		attrs = append(attrs, semconv.HTTPRoute(p))
		name = r.t.spanName(name, p)
	}
	// The attributes are set at the end, with the rest: set at the start
	// too, the SDK would copy them twice. The samplers the relay is given
	// (OTEL_TRACES_SAMPLER) read none.
	r.startAttrs = attrs
	r.ctx, r.span = r.t.tracer.Start(parent, name, r.t.serverKind, trace.WithTimestamp(r.rep.Start))
	if sc := r.span.SpanContext(); sc.IsValid() {
		// One string for both ids (hex, as TraceID.String and
		// SpanID.String write them).
		var ids [48]byte
		tid, sid := sc.TraceID(), sc.SpanID()
		hex.Encode(ids[:32], tid[:])
		hex.Encode(ids[32:], sid[:])
		s := string(ids[:])
		r.rep.TraceID, r.rep.SpanID = s[:32], s[32:]
	}
}

// spanName returns the SERVER span's name of method (semconv's, "HTTP"
// for one it does not know) on the route of prefix: "{method} {prefix}".
func (t *Tracer) spanName(method, prefix string) string {
	k := [2]string{method, prefix}
	if name, ok := cached(&t.cache.mu, t.cache.names, k); ok {
		return name
	}
	name := method + " " + prefix
	cache(&t.cache.mu, t.cache.names, k, name)
	return name
}

// upstream returns what the producer's URL u gives the spans.
func (t *Tracer) upstream(u string) *upstream {
	if up, ok := cached(&t.cache.mu, t.cache.upstreams, u); ok {
		return up
	}
	up := &upstream{redacted: redact.URL(u)}
	if pu, err := url.Parse(u); err == nil && pu.Host != "" {
		up.full = up.redacted
		up.addr, up.port = splitHost(pu.Host, pu.Scheme)
	}
	cache(&t.cache.mu, t.cache.upstreams, u, up)
	return up
}

// cached looks k up in m, one of a spanCache's maps, which mu guards.
func cached[K comparable, V any](mu *sync.RWMutex, m map[K]V, k K) (V, bool) {
	mu.RLock()
	defer mu.RUnlock()
	v, ok := m[k]
	return v, ok
}

// cache sets k to v in m, one of a spanCache's maps, which mu guards,
// unless m holds spanCacheSize entries already.
func cache[K comparable, V any](mu *sync.RWMutex, m map[K]V, k K, v V) {
	mu.Lock()
	defer mu.Unlock()
	if len(m) < spanCacheSize {
		m[k] = v
	}
}

// methodAttr returns the http.request.method of method and its span name,
// as semconv has them: "_OTHER" and "HTTP" for a method it does not know,
// the method sent then appended to attrs as http.request.method_original.
func methodAttr(method []byte, attrs *[]attribute.KeyValue) (attribute.KeyValue, string) {
	switch string(method) {
	case "GET":
		return semconv.HTTPRequestMethodGet, "GET"
	case "POST":
		return semconv.HTTPRequestMethodPost, "POST"
	case "HEAD":
		return semconv.HTTPRequestMethodHead, "HEAD"
	case "PUT":
		return semconv.HTTPRequestMethodPut, "PUT"
	case "DELETE":
		return semconv.HTTPRequestMethodDelete, "DELETE"
	case "OPTIONS":
		return semconv.HTTPRequestMethodOptions, "OPTIONS"
	case "PATCH":
		return semconv.HTTPRequestMethodPatch, "PATCH"
	case "TRACE":
		return semconv.HTTPRequestMethodTrace, "TRACE"
	case "CONNECT":
		return semconv.HTTPRequestMethodConnect, "CONNECT"
	}
	*attrs = append(*attrs, semconv.HTTPRequestMethodOriginal(string(method)))
	return semconv.HTTPRequestMethodOther, "HTTP"
}

// serverAttrs appends the HTTP server attributes of the consumer's
// request: url.scheme, server.address and server.port as the consumer
// asked for them (X-Forwarded-Proto and X-Forwarded-Host from a proxy in
// front, else the relay's plain HTTP and Host), user_agent.original,
// client.address (the first of X-Forwarded-For, else the peer, as
// otelhttp does) and network.peer.address and .port (the connection's).
func serverAttrs(attrs []attribute.KeyValue, h *fasthttp.RequestHeader, peer net.Addr) []attribute.KeyValue {
	scheme := "http" // the relay serves plain HTTP
	if p := firstValue(h.Peek("X-Forwarded-Proto")); p == "https" || p == "http" {
		scheme = p
	}
	attrs = append(attrs, semconv.URLScheme(scheme))
	host := firstValue(h.Peek("X-Forwarded-Host"))
	if host == "" {
		host = string(h.Host())
	}
	if addr, port := splitHost(host, scheme); addr != "" {
		attrs = append(attrs, semconv.ServerAddress(addr), semconv.ServerPort(port))
	}
	if ua := h.UserAgent(); len(ua) > 0 {
		attrs = append(attrs, semconv.UserAgentOriginal(string(ua)))
	}
	client := firstValue(h.Peek("X-Forwarded-For"))
	if ap, ok := peerAddrPort(peer); ok {
		peerAddr := ap.Addr().Unmap().String()
		attrs = append(attrs, semconv.NetworkPeerAddress(peerAddr), semconv.NetworkPeerPort(int(ap.Port())))
		if client == "" {
			client = peerAddr
		}
	}
	if client != "" {
		attrs = append(attrs, semconv.ClientAddress(client))
	}
	return attrs
}

// firstValue is the first element of a comma-separated header value.
func firstValue(v []byte) string {
	first, _, _ := bytes.Cut(v, []byte(","))
	return string(bytes.TrimSpace(first))
}

// splitHost splits a Host header into its name and port, the scheme's
// default port when it names none; "" when there is no host.
func splitHost(host, scheme string) (string, int) {
	if host == "" {
		return "", 0
	}
	// Only a host that may name a port is split: net.SplitHostPort's
	// error on one that does not is an allocation.
	if i := strings.LastIndexByte(host, ':'); i > 0 && (strings.IndexByte(host, ':') == i || host[i-1] == ']') {
		if h, p, err := net.SplitHostPort(host); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 1<<16 {
				return h, n
			}
			return h, defaultPort(scheme)
		}
	}
	return strings.Trim(host, "[]"), defaultPort(scheme)
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// peerAddrPort is the address and port of a TCP peer.
func peerAddrPort(a net.Addr) (netip.AddrPort, bool) {
	if t, ok := a.(*net.TCPAddr); ok && t != nil {
		return t.AddrPort(), true
	}
	return netip.AddrPort{}, false
}

// ProducerHeaders starts the CLIENT span of the producer's request, a
// child of the SERVER span, and sets it as the parent of the producer's
// spans: traceparent (and tracestate), in place of the consumer's.
func (r *runTap) ProducerHeaders(h *fasthttp.RequestHeader) {
	if r.span == nil {
		return
	}
	_, r.client = r.t.tracer.Start(r.ctx, r.name, r.t.clientKind)
	// The consumer's tracestate belongs to its traceparent: the span's
	// (inherited from it when the span continues it) is set instead.
	h.Del("Tracestate")
	setTraceContext(h, r.client.SpanContext())
}

// setTraceContext sets sc as the traceparent (and tracestate) of h, as
// propagation.TraceContext's Inject does, written into h directly rather
// than through a carrier's strings: every line of each replaced (a
// consumer may have sent several, and fasthttp's Set replaces the first).
func setTraceContext(h *fasthttp.RequestHeader, sc trace.SpanContext) {
	if !sc.IsValid() {
		return
	}
	if ts := sc.TraceState(); ts.Len() > 0 {
		h.Del("Tracestate")
		h.Set("Tracestate", ts.String())
	}
	// version "-" trace id "-" parent id "-" flags (W3C Trace Context
	// §3.2), the flags those it defines: sampled and random.
	var tp [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := [1]byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))}
	copy(tp[:], "00-")
	hex.Encode(tp[3:35], tid[:])
	tp[35] = '-'
	hex.Encode(tp[36:52], sid[:])
	tp[52] = '-'
	hex.Encode(tp[53:], flags[:])
	h.Del("Traceparent")
	h.SetBytesV("Traceparent", tp[:])
}

func (r *runTap) Received(body []byte) { r.reqBody = len(body) }

func (*runTap) Forwarded(negotiate.InputPlan, []byte) {}
func (*runTap) Wrote([]byte)                          {}
func (*runTap) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {
}

// Read times the producer's stream: the last read is where its response
// ended, as the CLIENT span sees it.
func (r *runTap) Read([]byte) { r.lastRead = time.Now() }

func (r *runTap) Streaming(negotiate.Version, negotiate.Version) {
	if r.span != nil {
		r.span.AddEvent(EventProducerHead)
	}
}

func (r *runTap) Flushed(events int) {
	if events <= r.events || r.span == nil {
		return
	}
	if r.events == 0 {
		// Timed by the SDK (a timestamp option is an allocation), before
		// lastEventAt: the terminal event is never before it.
		r.span.AddEvent(EventFirstEvent)
	}
	r.lastEventAt = time.Now()
	r.events = events
}

func (r *runTap) Warned(w translate.Warning) {
	if !slices.Contains(r.lossy, w.Shape) {
		r.lossy = append(r.lossy, w.Shape)
	}
}

// streamed reports whether the producer's event stream was relayed.
func streamed(rep *relay.RunReport) bool {
	return rep.Problem == "" && rep.Untranslated == "" && rep.Status >= 200 && rep.Status <= 299
}

// End sets what the report says of the run on its spans, and ends them.
func (r *runTap) End(rep *relay.RunReport) {
	if r.span == nil {
		r.start(context.Background(), nil)
	}
	s := r.span
	end := rep.Start.Add(rep.Duration)
	if rep.Duration <= 0 {
		end = time.Now()
	}
	var up *upstream
	if rep.URL != "" {
		up = r.t.upstream(rep.URL)
	}
	attrs := r.startAttrs
	if rep.Route != "" {
		attrs = append(attrs, attribute.String(AttrRoute, rep.Route))
	}
	if rep.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(rep.Status))
	}
	if r.reqBody >= 0 {
		attrs = append(attrs, semconv.HTTPRequestBodySize(r.reqBody))
	}
	if up != nil {
		attrs = append(attrs, attribute.String(AttrUpstream, up.redacted))
	}
	if !r.proxied {
		attrs = r.runAttrs(attrs, rep)
	}
	switch {
	case rep.Problem != "":
		attrs = append(attrs, attribute.String(AttrProblem, rep.Problem), semconv.ErrorTypeKey.String(rep.Problem))
		if rep.Status >= 500 {
			s.SetStatus(codes.Error, rep.Problem)
		}
	case rep.Abort == relay.CodeConsumerGone || rep.Abort == relay.CodeConsumerStalled:
		// The consumer's doing: no RUN_ERROR was written, nothing failed here.
		attrs = append(attrs, attribute.String(AttrAbort, rep.Abort))
	case rep.Abort != "":
		// The relay ended the stream with a RUN_ERROR of its own.
		attrs = append(attrs, attribute.String(AttrAbort, rep.Abort), semconv.ErrorTypeKey.String(rep.Abort))
		s.SetStatus(codes.Error, rep.Abort)
		if rep.Err != nil {
			s.RecordError(rep.Err)
		}
	case rep.Status >= 500:
		attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(rep.Status)))
		s.SetStatus(codes.Error, "")
	}
	s.SetAttributes(attrs...)
	r.endClient(rep, up, end)
	s.End(trace.WithTimestamp(end))
}

// runAttrs appends the AG-UI attributes of a run, and adds its terminal
// event.
func (r *runTap) runAttrs(attrs []attribute.KeyValue, rep *relay.RunReport) []attribute.KeyValue {
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
	if !rep.ProducerPython.IsZero() {
		attrs = append(attrs, attribute.String(AttrProducerPython, rep.ProducerPython.Name()))
	}
	if rep.Problem == "" && rep.Status >= 200 && rep.Status <= 299 {
		// Answered: the producer's side of the run.
		attrs = append(attrs, attribute.String(AttrProducerVersion, relay.VersionLabel(rep.Producer)),
			attribute.Bool(AttrTranslated, rep.Translated), attribute.Int(AttrEvents, rep.Events))
	}
	if streamed(rep) {
		// The event stream's bytes written to the consumer, keep-alive
		// comments and a RUN_ERROR of the relay's included, the chunked
		// framing not; a response passed on unread is not counted.
		attrs = append(attrs, semconv.HTTPResponseBodySize(rep.Bytes))
	}
	if rep.Untranslated != "" {
		attrs = append(attrs, attribute.String(AttrUntranslated, rep.Untranslated))
	}
	if rep.Terminal != "" {
		attrs = append(attrs, attribute.String(AttrTerminal, rep.Terminal))
		if !r.lastEventAt.IsZero() {
			// The event names no type: the span's agui.relay.terminal does.
			r.span.AddEvent(EventTerminalEvent, trace.WithTimestamp(r.lastEventAt))
		}
	}
	if len(r.lossy) > 0 {
		attrs = append(attrs, attribute.StringSlice(AttrLossyShapes, r.lossy))
	}
	return attrs
}

// endClient ends the CLIENT span of the producer's request, when it was
// made: at the last read of the producer's stream, else at the run's end
// (a response passed on, a request that failed or was given up). up is
// what rep.URL gives, nil when there is none.
func (r *runTap) endClient(rep *relay.RunReport, up *upstream, end time.Time) {
	c := r.client
	if c == nil {
		return
	}
	attrs := r.attrs[:0]
	if r.method.Valid() {
		attrs = append(attrs, r.method)
	}
	if up != nil && up.full != "" {
		if up.addr != "" {
			attrs = append(attrs, semconv.ServerAddress(up.addr), semconv.ServerPort(up.port))
		}
		attrs = append(attrs, semconv.URLFull(up.full))
	}
	// The producer's status is the one passed on, on a response that was
	// not refused (a refusal's is the relay's own).
	answered := rep.Problem == "" && rep.Status != 0
	switch {
	case answered && rep.Status >= 400:
		attrs = append(attrs, semconv.HTTPResponseStatusCode(rep.Status), semconv.ErrorTypeKey.String(strconv.Itoa(rep.Status)))
		c.SetStatus(codes.Error, "")
	case answered:
		attrs = append(attrs, semconv.HTTPResponseStatusCode(rep.Status))
	case rep.Problem != "":
		// No response the relay could pass on: unreachable, timed out,
		// malformed, an upgrade.
		attrs = append(attrs, semconv.ErrorTypeKey.String(rep.Problem))
		c.SetStatus(codes.Error, rep.Problem)
		if rep.Err != nil {
			c.RecordError(rep.Err)
		}
	}
	if rep.Abort != "" && rep.Abort != relay.CodeConsumerGone && rep.Abort != relay.CodeConsumerStalled {
		// The producer's stream was cut short (broken, silent too long).
		attrs = append(attrs, semconv.ErrorTypeKey.String(rep.Abort))
		c.SetStatus(codes.Error, rep.Abort)
	}
	at := end
	if rep.Abort == "" && !r.lastRead.IsZero() {
		at = r.lastRead
	}
	c.SetAttributes(attrs...)
	c.End(trace.WithTimestamp(at))
}

// consumerCarrier reads the trace context of the consumer's request.
type consumerCarrier struct{ h *fasthttp.RequestHeader }

func (c consumerCarrier) Get(key string) string { return string(c.h.Peek(key)) }
func (consumerCarrier) Set(string, string)      {}
func (consumerCarrier) Keys() []string          { return nil }
