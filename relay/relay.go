// Package relay is the streaming core of agui-relay: it takes a run from a
// consumer, forwards it to the producer and streams the producer's events
// back one at a time as they arrive, shaped for the consumer's protocol
// version by a Stream.
package relay

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/redact"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Relay relays AG-UI runs between consumers and one producer.
//
// A POST whose body is JSON is a run: the body is a RunAgentInput, checked
// and forwarded; the producer's event stream comes back through a Stream,
// flushed whenever the relay would otherwise wait for the producer, so that
// no event waits behind a later one. Any other request is proxied unchanged.
//
// Errors come in two regimes. Before the first byte of the response, a failure
// is an HTTP error with an application/problem+json body (400, 413, 502,
// 503, 504); a non-2xx response of the producer is passed on as it is. Once the
// stream has started, the relay can only end it: when the producer's stream
// breaks while the consumer is owed a terminal event (see Stream.Owed), it
// writes a RUN_ERROR of its own first, and it logs.
//
// An event whose data is not JSON is relayed untouched, in its place, and
// the stream goes on: the relay never repairs or drops it, and adds no
// RUN_ERROR, because every consumer fails the run on it with its own parse
// error (which names the producer's bytes better than the relay could). On
// a run it translates, the relay logs such events with a count; events it
// passes through byte for byte it does not parse. A producer response the
// relay cannot read as events (not text/event-stream, or compressed other
// than gzip, which it decodes) is passed on as it is.
//
// Set the fields, then use Handle (or Server) from any number of goroutines;
// the fields must not change once the first request is handled.
type Relay struct {
	// Upstream is the producer's base URL, "http://host:port/prefix"; the
	// path and query of each request are appended to it. Required.
	Upstream string
	// Route names the route this relay serves (see Router), for logs and
	// metrics; it is copied into every RunReport. Empty outside a Router.
	Route string
	// RoutePrefix is the prefix of the route this relay serves
	// (Route.Prefix), copied into every RunReport: a trace's http.route.
	// Empty outside a Router.
	RoutePrefix string
	// StripPrefix, when set, is removed from the front of each request's
	// path before the path is appended to Upstream (a route's stripPrefix),
	// and sent to the producer as X-Forwarded-Prefix.
	StripPrefix string
	// Client sends requests to the producer; nil means NewClient with
	// default options, logging to Log.
	Client Doer
	// ConsumerVersion is what consumers that do not declare protocolVersion
	// read. Zero is auto: such a consumer predates the field and reads as
	// negotiate.NewestBeforeField (0.0.59); 1.0 reads it as current. A
	// consumer that declares is taken at its word either way.
	ConsumerVersion negotiate.Version
	// ProducerVersion is what the producer speaks when it does not declare
	// it; zero means it is learnt per run from RUN_STARTED.
	ProducerVersion negotiate.Version
	// ProducerPython, when set, names the producer by the release of the
	// Python SDK it is built on (ag-ui-protocol); ProducerVersion must then
	// be that release's PyProfile.Events. The input is shaped for the
	// release's models (negotiate.DecidePythonInput), and its runs are
	// always translated.
	ProducerPython negotiate.PyRelease
	// MaxBody is the largest RunAgentInput accepted, in bytes; larger gets
	// 413. Zero means 64 MiB.
	MaxBody int
	// MaxBodiesInFlight bounds the bytes of request bodies the relay's
	// Server holds at once, all requests together (see bodyBudget): each
	// holds what it received, and a body that would take them over is
	// refused with 503 and Retry-After, from its Content-Length before it
	// is read when that is over what is free. Zero means four times
	// MaxBody; it is never below MaxBody. (A Router's server has the
	// Router's.)
	MaxBodiesInFlight int
	// BodyTimeout cuts a request whose body stops arriving: no byte of it
	// for this long (within an eighth) answers 408 and closes the
	// connection, as nginx's client_body_timeout does. Zero means
	// DefaultBodyTimeout; negative means none (the server's read timeout,
	// two minutes for the whole request, still bounds it). It applies on
	// the Relay's Server, or a Router's to the requests of the Relay's
	// route.
	BodyTimeout time.Duration
	// MaxFrame is the largest event frame accepted from the producer; a
	// larger one ends the run with a RUN_ERROR. Zero means 10 MiB.
	MaxFrame int
	// IdleTimeout ends a run whose producer sends nothing (not even a
	// comment) for this long; zero means never. The time the relay spends
	// blocked writing to a consumer that does not read is not counted: the
	// producer waits behind it then (ConsumerStallTimeout bounds it).
	IdleTimeout time.Duration
	// KeepAlive is how long the consumer of a stream whose producer is
	// silent mid-stream may be sent nothing before the relay writes it an
	// SSE comment, ": keep-alive" (event.KeepAliveFrame), and again each
	// KeepAlive while the silence lasts: a proxy between them cuts a
	// connection that stays silent (nginx's proxy_read_timeout and AWS
	// ALB's idle timeout are 60 s by default), and a consumer that left is
	// noticed at the write. It is written only between frames; zero means
	// none. Nothing is sent before the producer's response header: the relay
	// has no status to send yet.
	KeepAlive time.Duration
	// RunTimeout ends a run that lasts longer, counted from the request;
	// zero means never.
	RunTimeout time.Duration
	// ConsumerStallTimeout ends a run whose consumer takes no byte of the
	// stream for this long (within an eighth) while the relay has bytes
	// for it; each byte taken starts it again, so a large event read
	// slowly but steadily is not cut. The producer waits behind the
	// consumer meanwhile, and the time is not counted as the producer's
	// silence (IdleTimeout). At the limit the producer's request is
	// cancelled and the consumer's connection closed, with no RUN_ERROR
	// (it could not be read); the run's Abort is consumer_stalled. Zero
	// means DefaultConsumerStallTimeout; negative means never.
	ConsumerStallTimeout time.Duration
	// CheckInput judges a RunAgentInput for a consumer of the given version
	// and returns what is malformed; any error answers 400 and the producer
	// is never contacted. It sees only bodies that are JSON objects. nil
	// means JudgeInput: the rules of the consumer's version.
	CheckInput func(consumer negotiate.Version, body []byte) []InputError
	// TranslateInput rewrites a RunAgentInput for the producer when plan
	// says it must be translated. It must leave forwardedProps byte for byte
	// as it was; body is borrowed for the call. An error answers 400. nil
	// means the translate package's input chain (reporting to Log and the
	// run's tap), which also runs on untranslated input to keep activity
	// messages from the producer.
	TranslateInput func(plan negotiate.InputPlan, body []byte) ([]byte, error)
	// Log receives one INFO line per run, a WARN line per lossy
	// translation of a run (once per shape, with a count) and the errors;
	// nil discards.
	Log *zap.Logger
	// QuietTranslationWarnings leaves the lossy translations out of Log
	// (--quiet-translation-warnings); the taps still see them (Warned).
	QuietTranslationWarnings bool
	// CORS, when set, is the route's cross-origin policy: the relay answers
	// preflights and puts the CORS headers on every response (see CORS). nil:
	// no CORS of the relay's; the producer's headers pass through.
	CORS *CORS
	// Poller, when set, watches the consumers' connections for a hangup
	// and wakes the streams that parked: a stream whose producer has sent
	// nothing for a second gives its goroutine up until the producer's
	// next bytes. One Poller serves every Relay of a process (the serve
	// command makes one; its Close comes after the runs ended); it counts
	// their streams for its release of memory (Poller.ReleaseMemory).
	// nil: each stream keeps its goroutine, and a goroutine of its own
	// watches the consumer, which then cannot keep its connection for a
	// next request.
	Poller *Poller
	// ReuseGoroutines has the Relay start as few goroutines as it can (the
	// serve command sets it): a persistent connection's next stream runs on the
	// goroutine that served its request, and a stream whose producer is
	// silent for a second parks (with Poller), run on by a new goroutine
	// when bytes arrive. false: each stream runs on a goroutine of its own,
	// the one the server starts for the connection the stream takes over,
	// to the stream's end (as net/http's hijacked connections do).
	ReuseGoroutines bool
	// Tap, when set, is called when a run starts and returns what watches
	// the run as it passes (metrics, recordings; see RunTap), or nil. It is
	// the one way to watch a Relay's runs: a tap's End is given the report
	// that is also logged, once the run is over, whether it was streamed or
	// refused. The report is the run's, filled in as the run goes.
	Tap func(*RunReport) RunTap
	// RequestTap, when set, is called as a request that is not a run
	// starts, and returns what watches it (tracing's span), or nil.
	RequestTap func(*RunReport) RequestTap

	once       sync.Once
	tuning     *streamTuning                   // what a test changes of the streams (export_test.go); nil in production
	srv        atomic.Pointer[fasthttp.Server] // serves a consumer's next request after a stream (keep-alive); see serveNextWith
	bodies     *bodyBudget                     // the budget of Server's bodies; set by Server
	lastURL    atomic.Pointer[string]          // the URL a run was last sent to (upstreamURL)
	client     Doer
	translator *event.Translator // over the whole registry, reporting to losses
	losses     lossLog
	log        *zap.Logger
	// counts holds the event.Counts of ended runs for the next (the report
	// that carries them is borrowed by its tap, so they come back once it
	// has been reported).
	counts sync.Pool
	base   string

	mu     sync.Mutex
	runs   map[*upstreamBody]struct{}
	ending *abortError
}

// DefaultConsumerStallTimeout is the ConsumerStallTimeout of a Relay that
// sets none. A consumer that reads takes what the relay writes within
// milliseconds, and the relay writes only once the socket's buffers have
// room; one that has taken nothing for a minute (a frozen page, a suspended
// laptop, a peer gone without a reset) holds its producer and the
// producer's connection for nothing.
const DefaultConsumerStallTimeout = time.Minute

// DefaultBodyTimeout is the BodyTimeout of a Relay that sets none: nginx's
// client_body_timeout. A client that sends no byte of its body for a
// minute is not uploading; the connection and what the body holds of
// --max-bodies-in-flight go back to the others.
const DefaultBodyTimeout = time.Minute

// bodyTimeout is BodyTimeout with its default; at most zero: none.
func (r *Relay) bodyTimeout() time.Duration {
	if r.BodyTimeout == 0 {
		return DefaultBodyTimeout
	}
	return r.BodyTimeout
}

// RunReport describes one relayed run, for the log and for metrics.
type RunReport struct {
	// Route and RoutePrefix are the Relay's.
	Route, RoutePrefix string
	// Peer is the remote address of the consumer's connection, set when
	// the run has a tap, before ConsumerHeaders.
	Peer net.Addr
	// TraceID and SpanID name the run in the trace the log line joins: a
	// tap that traces the run sets them (at ConsumerHeaders); otherwise
	// TraceID is the trace id of the consumer's traceparent, "" when it
	// sent none that is valid.
	TraceID, SpanID string
	// RunID and ThreadID are the input's.
	RunID, ThreadID string
	// URL is where the run was sent.
	URL string
	// Status is the HTTP status sent to the consumer.
	Status int
	// Consumer is the version the stream was shaped for; Producer the
	// version the producer spoke on the last run of the stream (zero when it
	// predates the protocolVersion field and was not configured).
	Consumer, Producer negotiate.Version
	// ProducerPython is the Relay's ProducerPython: the Python SDK release
	// the producer is built on, whose events Producer names by the
	// TypeScript release they match; zero for any other producer.
	ProducerPython negotiate.PyRelease
	// ConsumerLearnt says how Consumer was learnt: declared, configured or
	// inferred (NotLearnt when the run was refused before).
	ConsumerLearnt negotiate.Learnt
	// Translated reports that the last run of the stream was translated.
	Translated bool
	// Untranslated says why a successful response was passed on as the
	// producer sent it, unread (UntranslatedProtobuf, UntranslatedOther,
	// UntranslatedEncoding); "" when it was streamed, or not a success.
	Untranslated string
	// Events and Bytes count what was written to the consumer; Runs the
	// RUN_STARTED events seen.
	Events, Bytes, Runs int
	// Terminal is the last terminal event relayed, "" when none.
	Terminal string
	// Abort is the RUN_ERROR code of the relay's own when it ended the
	// stream early ("consumer_gone" when the consumer did,
	// "consumer_stalled" when it read nothing for ConsumerStallTimeout),
	// "" otherwise.
	Abort string
	// Err is the error behind Abort, when there is one: what broke the
	// producer's stream, or the write that failed to a consumer that went
	// away. It is nil when Abort is the whole story (a timeout, a hangup
	// seen before any write failed, a shutdown).
	Err error
	// Problem is the type of the problem+json the relay responded with
	// before the stream started, "" when there was none.
	Problem string
	// Counts are the events and bytes by type and direction, kept when the
	// run is tapped and streamed; nil otherwise. They are borrowed as the
	// report is: the relay takes them back once End returned.
	Counts *event.Counts
	// Start and Duration time the run from the request.
	Start    time.Time
	Duration time.Duration

	tap     RunTap
	refused *Problem // the response of a run refused (refuse), for its log line
}

var zeroTime time.Time

func (r *Relay) init() {
	r.log = r.Log
	if r.log == nil {
		r.log = zap.NewNop()
	}
	r.client = r.Client
	if r.client == nil {
		r.client = NewClient(ClientOptions{Log: r.log})
	}
	r.losses = lossLog{log: r.log, quiet: r.QuietTranslationWarnings}
	r.translator = &event.Translator{Observer: &r.losses}
	r.base = strings.TrimSuffix(r.Upstream, "/")
}

func (r *Relay) maxBody() int {
	if r.MaxBody <= 0 {
		return 64 << 20
	}
	return r.MaxBody
}

// Server returns a fasthttp server for the relay, configured for streaming:
// request bodies read as they arrive within MaxBody, MaxBodiesInFlight and
// BodyTimeout (bodyBudget), a 16 KiB read buffer (large Authorization
// headers), TCP keep-alive, problem+json responses to requests it cannot
// parse. Event streams are written on connections the relay takes over
// (hijack.go), which the server's Shutdown does not wait for: AwaitRuns.
func (r *Relay) Server() *fasthttp.Server {
	r.once.Do(r.init)
	s := &fasthttp.Server{
		Handler:                      r.Handle,
		ErrorHandler:                 r.serverError,
		ExpectHandler:                r.expect,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  2 * time.Minute,
		WriteTimeout:                 2 * time.Minute,
		IdleTimeout:                  2 * time.Minute,
		ReadBufferSize:               readBufferSize,
		MaxRequestBodySize:           r.maxBody(),
		TCPKeepalive:                 true,
		CloseOnShutdown:              true,
		KeepHijackedConns:            true, // streams close their own; see respond
		// Buffers are taken at a connection's first byte and the write
		// buffer is pooled after each response. The read buffer stays
		// while the server serves the connection: request bodies are
		// streamed (bodyBudget), and fasthttp cannot tell when one was
		// read whole.
		ReduceMemoryUsage:     true,
		MaxIdleWorkerDuration: time.Second,
		Logger:                zapPrintf{r.log},
	}
	r.bodies = newBodyBudget(r.MaxBodiesInFlight, r.maxBody(), s, func(*fasthttp.RequestHeader) time.Duration { return r.bodyTimeout() })
	r.bodies.install(s)
	r.serveNextWith(s)
	return s
}

// readBufferSize is the server's read buffer: the largest request header
// (large Authorization headers).
const readBufferSize = 16 << 10

// serveNextWith sets the server that serves a stream's connection's next
// request: Server's, or the Router's. Without one (Handle on the caller's
// server) the connection is closed at the stream's end.
func (r *Relay) serveNextWith(s *fasthttp.Server) { r.srv.Store(s) }

// expect answers a request that waits for 100 Continue (Expect:
// 100-continue) before sending its body: 413 at once when its
// Content-Length is over MaxBody, 503 when the bodies' budget refused it,
// so that the body is never sent.
func (r *Relay) expect(ctx *fasthttp.RequestCtx) int {
	p := expectProblem(ctx, r.bodies, r.maxBody())
	if p == nil {
		return fasthttp.StatusContinue
	}
	r.refuseUnread(ctx, p)
	return p.Status
}

// expectProblem is the refusal of a request that waits for 100 Continue
// and whose body limit is limit, nil when its body may come.
func expectProblem(ctx *fasthttp.RequestCtx, bodies *bodyBudget, limit int) *Problem {
	if p := bodies.refusedBeforeContinue(ctx); p != nil {
		return p
	}
	if ctx.Request.Header.ContentLength() > limit {
		return problemTooLarge(limit)
	}
	return nil
}

// serverError answers a request the server could not read.
func (r *Relay) serverError(ctx *fasthttp.RequestCtx, err error) {
	if servedInPlace(ctx) {
		return
	}
	p := r.bodies.refusal(ctx, err)
	if p == nil {
		p = serverProblem(err, r.maxBody())
	}
	r.refuseUnread(ctx, p)
}

// refuseUnread responds p, with the CORS headers, to a request refused
// before its body was read (the server's limits, the bodies' budget). A
// run by its header (isRunHead) is reported as a run.
func (r *Relay) refuseUnread(ctx *fasthttp.RequestCtx, p *Problem) {
	r.once.Do(r.init) // it may be the Relay's first request
	if isRunHead(ctx) {
		rep := &RunReport{Route: r.Route, RoutePrefix: r.RoutePrefix, ProducerPython: r.ProducerPython, Start: time.Now()}
		r.tapRun(ctx, rep)
		r.refuse(ctx, rep, p)
	} else {
		p.Write(ctx)
	}
	r.CORS.apply(ctx)
}

// serverProblem is the problem sent to a request the server could not
// read, whose body limit is maxBody.
func serverProblem(err error, maxBody int) *Problem {
	var stalled *bodyTimeoutError
	switch {
	case errors.As(err, &stalled):
		return &Problem{Type: "urn:agui-relay:request-timeout", Title: "The request was not received in time", Status: fasthttp.StatusRequestTimeout,
			Detail: "no byte of the request body came for " + stalled.limit.String() + " (--body-timeout)"}
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return problemTooLarge(maxBody)
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)):
		// A request line or headers over the read buffer (16 KiB).
		return &Problem{Type: "urn:agui-relay:headers-too-large", Title: "The request headers are too large", Status: fasthttp.StatusRequestHeaderFieldsTooLarge}
	case isTimeout(err):
		return &Problem{Type: "urn:agui-relay:request-timeout", Title: "The request was not received in time", Status: fasthttp.StatusRequestTimeout}
	}
	// The kind alone: the error quotes the request's headers.
	return problemBadRequest(requestErrorKind(err))
}

// problemBadRequest answers a request the relay cannot read, kind naming
// its fault (requestErrorKind).
func problemBadRequest(kind string) *Problem {
	return &Problem{Type: "urn:agui-relay:bad-request", Title: "The request cannot be parsed", Status: fasthttp.StatusBadRequest, Detail: kind}
}

// translateInput applies the TranslateInput hook, or by default the input
// chain of the translate package, reporting to the relay's log and the
// run's tap (lossy steps warn once per shape, when the input is done).
func (r *Relay) translateInput(plan negotiate.InputPlan, doc *rules.Input, tap RunTap) ([]byte, error) {
	body := doc.Body()
	if r.TranslateInput != nil {
		if !plan.Translate {
			return body, nil
		}
		return r.TranslateInput(plan, body)
	}
	// The input chain runs even when the versions match: activity messages
	// never reach the producer. An input without them stays body itself,
	// and needs no translation run at all.
	if translate.InputUnchanged(plan, body) {
		return body, nil
	}
	out, run := translate.TranslateReadInput(r.translator.InputSteps(), plan, doc, event.ObserverFor(r.translator.Observer, tap))
	run.Finish()
	return out, nil
}

// Handle serves one request: a run, a CORS preflight, or anything else
// proxied unchanged. It works on any fasthttp.Server. On Server's, with a
// Poller, a stream's connection serves the consumer's next request, and
// with ReuseGoroutines a silent stream parks; on any other, a stream runs
// on the server's hijack goroutine to its end and closes its connection
// (Connection: close).
func (r *Relay) Handle(ctx *fasthttp.RequestCtx) {
	if servedInPlace(ctx) || refuseTransferCoding(ctx) {
		return
	}
	r.serve(ctx)
}

// serve is Handle for a request whose framing was checked (Router.Handle
// checks it before the route is matched).
func (r *Relay) serve(ctx *fasthttp.RequestCtx) {
	r.once.Do(r.init)
	switch t := ctx.RequestURI(); {
	case len(t) == 0 || t[0] != '/':
		// Absolute-form ("http://other/x"), CONNECT's authority-form or
		// "*": appended to Upstream, such a target could name another
		// host. The relay forwards to its upstream and nowhere else.
		problemTarget().Write(ctx)
	case hasDotSegment(t):
		problemDotSegment().Write(ctx)
	case r.CORS.preflight(ctx):
		return
	case isRun(ctx):
		r.run(ctx)
	default:
		r.proxy(ctx)
	}
	// A stream's header went out with the CORS headers already (run).
	if !ctx.Hijacked() {
		r.CORS.apply(ctx)
	}
}

// isRun reports whether the request is a run: a POST with a JSON body (or
// a body without a content type).
func isRun(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsPost() {
		return false
	}
	ct := ctx.Request.Header.ContentType()
	if len(ct) == 0 {
		return len(ctx.Request.Body()) > 0
	}
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	mt = bytes.TrimSpace(mt)
	const suffix = "+json"
	return bytes.EqualFold(mt, []byte("application/json")) ||
		len(mt) >= len(suffix) && bytes.EqualFold(mt[len(mt)-len(suffix):], []byte(suffix))
}

// isRunHead reports whether a request whose body was not read is a run
// by its header: a POST with a JSON content type, or with none and a body
// (isRun).
func isRunHead(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if !ctx.IsPost() {
		return false
	}
	if len(h.ContentType()) == 0 {
		return h.ContentLength() != 0 // -1: chunked, -2: to the connection's end
	}
	return isRun(ctx)
}

// newRequest builds the producer's request from the consumer's: the same
// method, path, query and end-to-end headers, sent to Upstream.
func (r *Relay) newRequest(ctx *fasthttp.RequestCtx) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	uri := ctx.RequestURI()
	strip := r.StripPrefix != "" && bytes.HasPrefix(uri, []byte(r.StripPrefix))
	if strip {
		uri = uri[len(r.StripPrefix):]
	}
	// Joined in a buffer of the frame's: the request copies it.
	var buf [256]byte
	req.SetRequestURIBytes(append(append(buf[:0], r.base...), uri...))
	req.Header.SetMethodBytes(ctx.Method())
	// A body without a Content-Type goes without one: fasthttp's client
	// would add application/octet-stream, a header the consumer did not send.
	req.Header.SetNoDefaultContentType(true)
	copyRequestHeaders(&req.Header, &ctx.Request.Header)
	setForwarded(&req.Header, ctx)
	if strip {
		req.Header.Set("X-Forwarded-Prefix", r.StripPrefix)
	}
	return req
}

// upstreamURL returns uri as a string (URI.String), the one a run before
// was given when it is the same URL, as a route's runs mostly are: a
// string less made per run.
func (r *Relay) upstreamURL(uri *fasthttp.URI) string {
	full := uri.FullURI()
	if last := r.lastURL.Load(); last != nil && *last == string(full) {
		return *last
	}
	s := string(full)
	r.lastURL.Store(&s)
	return s
}

// upstreamProblem maps a failure to get the producer's response to the
// problem the consumer reads.
func upstreamProblem(err error) *Problem {
	var m *malformedAnswerError
	switch {
	case errors.As(err, &m):
		return problemMalformed(m)
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return problemBusy(err)
	case isTimeout(err):
		return problemUpstreamTimeout(err)
	}
	return problemUnreachable(err)
}

// proxy passes a request that is not a run to the producer and its response
// back, both unchanged but for the hop-by-hop headers.
func (r *Relay) proxy(ctx *fasthttp.RequestCtx) {
	var tap RequestTap
	var rep *RunReport
	if r.RequestTap != nil {
		rep = &RunReport{Route: r.Route, RoutePrefix: r.RoutePrefix, Peer: ctx.RemoteAddr(), Start: time.Now()}
		if tap = r.RequestTap(rep); tap != nil {
			tap.ConsumerHeaders(&ctx.Request.Header)
		}
	}
	req := r.newRequest(ctx)
	req.SetBodyRaw(ctx.Request.Body())
	if tap != nil {
		tap.ProducerHeaders(&req.Header)
	}
	resp := acquireUpstreamResponse()
	gone, err := r.do(ctx, req, resp)
	uri := req.URI().String()
	fasthttp.ReleaseRequest(req)
	if tap != nil {
		rep.URL = uri
	}
	if p, ok := producerResponse(ctx, resp, gone, err); !ok {
		if p == nil {
			if tap != nil {
				rep.Abort = errConsumerGone.Code
			}
			endRequest(tap, rep, 0, "", nil)
			return
		}
		r.log.Error("proxying to the producer", zap.String("url", redact.URL(uri)), zap.ByteString("method", ctx.Method()), zap.Int("status", p.Status), zap.String("problem", p.Type), zap.Error(err))
		endRequest(tap, rep, p.Status, p.Type, err)
		p.Write(ctx)
		return
	}
	var done func()
	if tap != nil {
		status := resp.StatusCode()
		done = func() { endRequest(tap, rep, status, "", nil) }
	}
	r.passThrough(ctx, resp, done)
}

// endRequest tells the tap of a request that is not a run, when it has
// one, that the request is over, whose response had status.
func endRequest(tap RequestTap, rep *RunReport, status int, problem string, err error) {
	if tap != nil {
		rep.Status, rep.Problem, rep.Err, rep.Duration = status, problem, err, time.Since(rep.Start)
		tap.End(rep)
	}
}

// run relays one run in its three stages: admit (the input judged, the
// versions decided, the input translated), forward (the producer asked),
// stream (its response relayed).
func (r *Relay) run(ctx *fasthttp.RequestCtx) {
	rep := &RunReport{Route: r.Route, RoutePrefix: r.RoutePrefix, ProducerPython: r.ProducerPython, Start: time.Now()}
	in, plan, ok := r.admit(ctx, rep)
	if !ok {
		return
	}
	resp, ok := r.forward(ctx, rep, plan, in)
	if !ok {
		return
	}
	r.stream(ctx, rep, resp)
}

// tapRun gives the run of ctx its tap (Relay.Tap), shown the consumer's
// headers when it is a HeaderTap, and reports whether it has one. A run
// that no tap traces gets the trace id of the consumer's traceparent.
func (r *Relay) tapRun(ctx *fasthttp.RequestCtx, rep *RunReport) bool {
	if r.Tap != nil {
		rep.tap = r.Tap(rep)
	}
	if rep.tap != nil {
		rep.Peer = ctx.RemoteAddr()
		if ht, ok := rep.tap.(HeaderTap); ok {
			ht.ConsumerHeaders(&ctx.Request.Header)
		}
	}
	if rep.TraceID == "" {
		rep.TraceID = traceparentID(ctx.Request.Header.Peek("Traceparent"))
	}
	return rep.tap != nil
}

// admit reads and judges the consumer's RunAgentInput, decides the
// versions and translates the input for the producer; it reports false
// when the run was refused (a problem was its response).
func (r *Relay) admit(ctx *fasthttp.RequestCtx, rep *RunReport) (in []byte, plan negotiate.InputPlan, ok bool) {
	body := ctx.Request.Body()
	if r.tapRun(ctx, rep) {
		rep.tap.Received(body)
	}
	if len(body) > r.maxBody() {
		r.refuse(ctx, rep, problemTooLarge(r.maxBody()))
		return nil, plan, false
	}
	doc, errs := readInput(body)
	if errs != nil {
		r.refuse(ctx, rep, problemInput(errs))
		return nil, plan, false
	}
	// The members were located as the body was validated: no walk again.
	rep.RunID = memberString(doc.Member("runId"))
	rep.ThreadID = memberString(doc.Member("threadId"))

	// A protocolVersion member declares, whatever its value (one that is
	// not a version string is uninterpretable: read as newer, and judged
	// malformed); a null is an absent member, as 0.0.x peers send them.
	consumer := negotiate.Peer{Configured: r.ConsumerVersion}
	if pv := doc.Member("protocolVersion"); pv != "" && pv[0] == '"' {
		consumer.HasDeclared, consumer.Declared = true, gjson.Parse(pv).Str
	} else if pv != "" && pv != "null" {
		consumer.HasDeclared, consumer.Declared = true, pv
	}
	cv, learnt, warnings, err := negotiate.ConsumerVersion(consumer)
	if err != nil {
		r.refuse(ctx, rep, problemInput([]InputError{{"/protocolVersion", err.Error()}}))
		return nil, plan, false
	}
	rep.Consumer, rep.ConsumerLearnt = cv, learnt
	for _, w := range warnings {
		r.log.Warn(w, zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID))
	}
	if errs := r.checkInput(&doc, cv); len(errs) > 0 && !(learnt == negotiate.Inferred && len(r.checkInput(&doc, negotiate.Current)) == 0) {
		// An inferred version is a guess at which release before the
		// field the consumer is: it decides how the input and the stream
		// are shaped, never refuses an input the current protocol accepts
		// (a hand-written client that leaves out tools and context).
		p := problemInput(errs)
		if learnt == negotiate.Inferred {
			p.Detail += "; judged as " + cv.String() + ", the newest release before protocolVersion, since the input does not declare one" +
				" (a consumer of 1.0 or newer declares it; --consumer-version names the release of consumers that do not)"
		}
		r.refuse(ctx, rep, p)
		return nil, plan, false
	}

	// Input translation: the one place where the consumer's RunAgentInput
	// is rewritten for the producer (forwardedProps stays byte for byte).
	plan = negotiate.DecideInput(cv, r.ProducerVersion)
	if !r.ProducerPython.IsZero() {
		plan = negotiate.DecidePythonInput(cv, r.ProducerPython)
	}
	in, err = r.translateInput(plan, &doc, rep.tap)
	if err != nil {
		r.refuse(ctx, rep, problemInput([]InputError{{"", "cannot be translated for the producer: " + err.Error()}}))
		return nil, plan, false
	}
	return in, plan, true
}

// forward sends the input to the producer and returns its response, the
// body still to read; ok=false when there is none to relay (the consumer
// left, or the producer failed: a problem was the response).
func (r *Relay) forward(ctx *fasthttp.RequestCtx, rep *RunReport, plan negotiate.InputPlan, in []byte) (resp *fasthttp.Response, ok bool) {
	if rep.tap != nil {
		rep.tap.Forwarded(plan, in)
	}
	req := r.newRequest(ctx)
	if ht, ok := rep.tap.(HeaderTap); ok {
		ht.ProducerHeaders(&req.Header)
	}
	req.SetBodyRaw(in)
	// The relay reads the events; it cannot rewrite compressed ones.
	req.Header.Set(fasthttp.HeaderAcceptEncoding, "identity")
	// Nor a binary encoding: a consumer that can read an event stream gets
	// one, whatever else its Accept allows (a producer on @ag-ui/encoder
	// answers protobuf to */*). One that cannot is asked for as it asked.
	accept := consumerAccept(&ctx.Request.Header)
	readsSSE := acceptsEventStream(accept)
	if readsSSE {
		req.Header.Del(fasthttp.HeaderAccept) // every line of it
		req.Header.Set(fasthttp.HeaderAccept, mediaEventStream)
	}
	resp = acquireUpstreamResponse()
	gone, err := r.do(ctx, req, resp)
	rep.URL = r.upstreamURL(req.URI())
	fasthttp.ReleaseRequest(req)
	if p, ok := producerResponse(ctx, resp, gone, err); !ok {
		if p == nil {
			rep.Abort = errConsumerGone.Code
			rep.Duration = time.Since(rep.Start)
			r.report(rep)
			return nil, false
		}
		rep.Err = err
		r.refuse(ctx, rep, p)
		return nil, false
	}
	return resp, true
}

// stream responds to the consumer with the producer's event stream, shaped by
// a Stream on the hijacked connection (respond); a response that is not an
// event stream the relay can read goes to the consumer as it is.
func (r *Relay) stream(ctx *fasthttp.RequestCtx, rep *RunReport, resp *fasthttp.Response) {
	rep.Status = resp.StatusCode()
	body2, streamed := resp.BodyStream().(fasthttp.ReadCloserWithError)
	gz, readable := ContentCoding(resp.Header.ContentEncoding())
	if rep.Status < 200 || rep.Status > 299 || !isEventStream(resp.Header.ContentType()) || !streamed || !readable {
		// Not an event stream the relay can read: the producer's response
		// goes to the consumer as it is (an error status, a JSON response, a
		// binary transport, a compression the relay does not decode).
		if rep.Status >= 200 && rep.Status <= 299 {
			accept := consumerAccept(&ctx.Request.Header)
			r.untranslated(rep, resp, accept, acceptsEventStream(accept), readable)
		}
		r.passThrough(ctx, resp, func() {
			rep.Duration = time.Since(rep.Start)
			r.report(rep)
		})
		return
	}

	ctx.SetStatusCode(rep.Status)
	copyResponseHeaders(&ctx.Response.Header, &resp.Header)
	if gz {
		// Compressed although the relay asked for identity: decoded, so
		// that the events are read and shaped like any others, and sent on
		// uncompressed.
		ctx.Response.Header.Del(fasthttp.HeaderContentEncoding)
		body2 = &gunzipBody{body: body2}
	}
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no") // nginx in front: do not buffer
	// No server write deadline: the stream's writer keeps its own.
	ctx.SetWriteDeadline(zeroTime) //nolint:errcheck // only fails without a connection

	ub := newUpstreamBody(body2)
	remaining := time.Duration(0)
	if r.RunTimeout > 0 {
		remaining = max(r.RunTimeout-time.Since(rep.Start), -1)
	}
	ub.startTimers(r.IdleTimeout, remaining)
	r.track(ub)
	r.CORS.apply(ctx)             // before respond renders the header
	r.respond(ctx, ub, resp, rep) // on the hijacked connection, see hijack.go
}

// producerResponse judges the producer's response to r.do, for a run and
// for a request that is not one alike. It reports ok when resp is to be
// relayed; else resp is released and p is the problem to respond with, or
// nil when the consumer left meanwhile (gone: its connection is closed,
// see headerWait). A 101 is refused: the producer's connection is not HTTP
// any more (the transport closed it), and the relay does not tunnel.
func producerResponse(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, gone bool, err error) (p *Problem, ok bool) {
	switch {
	case gone:
		releaseAbandoned(resp, err)
		hangUp(ctx)
		return nil, false
	case err != nil:
		fasthttp.ReleaseResponse(resp)
		return upstreamProblem(err), false
	case resp.StatusCode() == fasthttp.StatusSwitchingProtocols:
		fasthttp.ReleaseResponse(resp)
		return problemUpgrade(), false
	}
	return nil, true
}

// releaseAbandoned releases the producer's response to a consumer that went
// away: a header that came anyway has its body closed, and so its connection.
func releaseAbandoned(resp *fasthttp.Response, err error) {
	if err == nil {
		if b, ok := resp.BodyStream().(fasthttp.ReadCloserWithError); ok {
			b.CloseWithError(errConsumerGone) //nolint:errcheck // abandoned
		}
	}
	fasthttp.ReleaseResponse(resp)
}

// hangUp answers a consumer that went away with nothing: its connection is
// closed as the handler returns, as a proxy does on a client's abort.
func hangUp(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { c.Close() }) //nolint:errcheck // nothing to tell
}

// consumerAccept returns the consumer's Accept header, its lines joined
// (a list may come in several).
func consumerAccept(h *fasthttp.RequestHeader) []byte {
	all := h.PeekAll(fasthttp.HeaderAccept)
	if len(all) == 1 {
		return all[0]
	}
	return bytes.Join(all, []byte(","))
}

// untranslated logs, once for the run, that a successful response goes to
// the consumer as the producer sent it, unread and unshaped for the
// consumer's version, and says why in rep.Untranslated (metrics count it).
func (r *Relay) untranslated(rep *RunReport, resp *fasthttp.Response, accept []byte, readsSSE, readable bool) {
	ct := resp.Header.ContentType()
	var why string
	switch {
	case !readable:
		rep.Untranslated = UntranslatedEncoding
		why = "the answer's content encoding is one the relay does not decode"
	case isProto(ct) && !readsSSE:
		rep.Untranslated = UntranslatedProtobuf
		why = "the consumer accepts only the AG-UI protobuf encoding, which the relay does not read: the stream is not shaped for the consumer's version"
	case isProto(ct):
		rep.Untranslated = UntranslatedProtobuf
		why = "the producer answered the AG-UI protobuf encoding although the relay asked for text/event-stream"
	default:
		rep.Untranslated = UntranslatedOther
		why = "the answer is not an event stream"
	}
	r.log.Warn("run passed through untranslated", zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID),
		zap.ByteString("content_type", ct), zap.ByteString("accept", accept), zap.String("why", why),
		zap.Stringer("consumer", rep.Consumer), zap.Stringer("consumer_learnt", rep.ConsumerLearnt))
}

// Reasons a run's response passed through untranslated (RunReport.Untranslated).
const (
	UntranslatedProtobuf = "protobuf"         // application/vnd.ag-ui.event+proto
	UntranslatedOther    = "not_event_stream" // another media type (JSON, HTML, none)
	UntranslatedEncoding = "content_encoding" // compressed other than gzip
)

// acquireUpstreamResponse returns a response for the producer's response.
// A response without Content-Type is passed on without one: fasthttp would
// otherwise report (and the relay copy) its default, text/plain.
func acquireUpstreamResponse() *fasthttp.Response {
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	return resp
}

func isEventStream(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte(mediaEventStream))
}

// refuse answers a run with a problem before its stream started, and
// reports it.
func (r *Relay) refuse(ctx *fasthttp.RequestCtx, rep *RunReport, p *Problem) {
	p.Write(ctx)
	rep.Status = p.Status
	rep.Problem = p.Type
	rep.Duration = time.Since(rep.Start)
	rep.refused = p
	r.report(rep)
}

// report ends a run, streamed or refused: it writes the run's one log line
// and tells the run's tap (End). It is the one place a run's end is told.
func (r *Relay) report(rep *RunReport) {
	if p := rep.refused; p != nil {
		fields := []zap.Field{zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID),
			zap.Int("status", p.Status), zap.String("problem", p.Type), zap.String("detail", p.Detail)}
		if len(p.Errors) > 0 {
			fields = append(fields, zap.Any("errors", p.Errors))
		}
		if rep.URL != "" {
			fields = append(fields, zap.String("upstream", redact.URL(rep.URL)))
		}
		fields = rep.appendTraceFields(fields)
		if m := (*malformedAnswerError)(nil); errors.As(rep.Err, &m) {
			fields = append(fields, zap.String("excerpt", m.excerpt))
		}
		if p.Status >= 500 {
			r.log.Error("run refused", fields...)
		} else {
			r.log.Info("run refused", fields...)
		}
	} else {
		r.logRun(rep)
	}
	if rep.tap != nil {
		rep.tap.End(rep)
	}
}

// logRun writes the line of a run that was responded to (streamed or passed
// on).
func (r *Relay) logRun(rep *RunReport) {
	level, msg := zapcore.InfoLevel, "run"
	if rep.Abort != "" && rep.Abort != errConsumerGone.Code {
		level, msg = zapcore.WarnLevel, "run ended by the relay"
	}
	// The fields are made only for a line that is written: they cost an
	// allocation a run, and a relay at --log-level warn writes no line for
	// a run that went well.
	if ce := r.log.Check(level, msg); ce != nil {
		fields := []zap.Field{
			zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID), zap.String("upstream", redact.URL(rep.URL)),
			zap.Int("status", rep.Status), zap.Int("events", rep.Events), zap.Int("bytes", rep.Bytes),
			zap.Duration("duration", rep.Duration), zap.Stringer("consumer", rep.Consumer),
			zap.Stringer("consumer_learnt", rep.ConsumerLearnt),
			zap.String("producer", VersionLabel(rep.Producer)), zap.Bool("translated", rep.Translated),
			zap.String("terminal", rep.Terminal),
		}
		if !rep.ProducerPython.IsZero() {
			fields = append(fields, zap.String("producer_python", rep.ProducerPython.Name()))
		}
		if rep.Abort != "" {
			fields = append(fields, zap.String("abort", rep.Abort))
			if rep.Err != nil {
				fields = append(fields, zap.Error(rep.Err))
			}
		}
		ce.Write(rep.appendTraceFields(fields)...)
	}
}

// appendTraceFields appends the run's trace_id and span_id to a log
// line's fields, those it has (see TraceID).
func (rep *RunReport) appendTraceFields(fields []zap.Field) []zap.Field {
	if rep.TraceID != "" {
		fields = append(fields, zap.String("trace_id", rep.TraceID))
	}
	if rep.SpanID != "" {
		fields = append(fields, zap.String("span_id", rep.SpanID))
	}
	return fields
}

// VersionLabel names a version as the logs, metrics and recordings do:
// "unknown" for the zero version (a producer that predates
// protocolVersion).
func VersionLabel(v negotiate.Version) string {
	if v.IsZero() {
		return "unknown"
	}
	return v.String()
}

func (r *Relay) track(u *upstreamBody) {
	r.mu.Lock()
	if r.runs == nil {
		r.runs = map[*upstreamBody]struct{}{}
	}
	r.runs[u] = struct{}{}
	ending := r.ending
	r.mu.Unlock()
	if ending != nil {
		u.cancel(ending)
	}
}

func (r *Relay) untrack(u *upstreamBody) {
	r.mu.Lock()
	delete(r.runs, u)
	r.mu.Unlock()
}

// Active returns the number of runs streaming now.
func (r *Relay) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// EndRuns ends every run streaming now, and every one that starts streaming
// from now on, with a RUN_ERROR of code relay_shutdown: the end of a
// shutdown's grace period.
func (r *Relay) EndRuns() {
	r.mu.Lock()
	r.ending = errShutdown
	runs := make([]*upstreamBody, 0, len(r.runs))
	for u := range r.runs {
		runs = append(runs, u)
	}
	r.mu.Unlock()
	for _, u := range runs {
		u.cancel(errShutdown)
	}
}
