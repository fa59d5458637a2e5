// Package relay is the streaming core of agui-relay: it forwards a
// consumer's run to the producer and streams the producer's events back as
// they arrive, shaped for the consumer's protocol version.
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
// A POST whose body is JSON is a run: its RunAgentInput is checked and
// forwarded, and the producer's event stream comes back through a Stream,
// flushed whenever the relay would otherwise wait for the producer. Any
// other request is proxied unchanged.
//
// Before the first byte of the response a failure is an HTTP error with an
// application/problem+json body; a non-2xx response of the producer is
// passed on as it is. After it the relay can only end the stream, writing a
// RUN_ERROR first when the consumer is owed a terminal event (Stream.Owed).
//
// An event whose data is not JSON is relayed untouched and the stream goes
// on: every consumer fails the run on it with its own parse error, which
// names the producer's bytes better than the relay could. A response that
// is not an event stream the relay can read is passed on as it is.
//
// Set the fields, then use Handle (or Server) from any number of goroutines;
// the fields must not change once the first request is handled.
type Relay struct {
	// Upstream is the producer's base URL, "http://host:port/prefix", to
	// which each request's path and query are appended. Required.
	Upstream string
	// Route names the route this relay serves (see Router), copied into
	// every RunReport. Empty outside a Router.
	Route string
	// RoutePrefix is the route's Route.Prefix, copied into every RunReport.
	RoutePrefix string
	// StripPrefix, when set, is removed from each request's path before it
	// is appended to Upstream, and sent as X-Forwarded-Prefix.
	StripPrefix string
	// Client sends requests to the producer; nil means NewClient.
	Client Doer
	// ConsumerVersion is the version of consumers that do not declare
	// protocolVersion. Zero is auto: negotiate.NewestBeforeField (0.0.59).
	ConsumerVersion negotiate.Version
	// ProducerVersion is the producer's version when it does not declare
	// one; zero means it is learnt per run from RUN_STARTED.
	ProducerVersion negotiate.Version
	// ProducerPython, when set, is the release of the Python SDK the
	// producer is built on; ProducerVersion must then be its
	// PyProfile.Events. Its runs are always translated.
	ProducerPython negotiate.PyRelease
	// MaxBody is the largest RunAgentInput accepted, in bytes; larger gets
	// 413. Zero means 64 MiB.
	MaxBody int
	// MaxBodiesInFlight bounds the bytes of request bodies Server buffers
	// at once (503 over it). Zero means four times MaxBody; it is never
	// below MaxBody.
	MaxBodiesInFlight int
	// BodyTimeout is how long a request body may send no byte (within an
	// eighth) before the response is 408 and the connection closed, as
	// nginx's client_body_timeout. Zero means DefaultBodyTimeout; negative
	// means none (the server's two-minute read timeout still applies).
	BodyTimeout time.Duration
	// MaxFrame is the largest event frame accepted from the producer; a
	// larger one ends the run with a RUN_ERROR. Zero means 10 MiB.
	MaxFrame int
	// IdleTimeout ends a run whose producer sends nothing (not even a
	// comment) for this long; zero means never. Time blocked writing to the
	// consumer is not counted (ConsumerStallTimeout bounds it).
	IdleTimeout time.Duration
	// KeepAlive is how long a stream's consumer may be sent nothing while
	// the producer is silent before the relay writes event.KeepAliveFrame:
	// proxies cut idle connections (nginx's proxy_read_timeout and AWS
	// ALB's idle timeout are 60 s by default). Zero means none. They need a
	// read deadline on the producer's connection: a Client whose response
	// bodies the relay does not read itself (not NewClient's) gets none,
	// and the Relay logs a WARN line at its first such run.
	KeepAlive time.Duration
	// RunTimeout ends a run that lasts longer, counted from the request;
	// zero means never.
	RunTimeout time.Duration
	// ConsumerStallTimeout ends a run whose consumer reads no byte of the
	// stream for this long (within an eighth) while the relay has bytes
	// for it, with no RUN_ERROR (it could not be read). Zero means
	// DefaultConsumerStallTimeout; negative means never.
	ConsumerStallTimeout time.Duration
	// CheckInput returns what is malformed in a RunAgentInput (a JSON
	// object) for a consumer of the given version; any error is a 400
	// response. nil means JudgeInput.
	CheckInput func(consumer negotiate.Version, body []byte) []InputError
	// TranslateInput rewrites a RunAgentInput for the producer when plan
	// says so. It must leave forwardedProps byte for byte; body is borrowed
	// for the call. An error is a 400 response. nil means the translate
	// package's input chain.
	TranslateInput func(plan negotiate.InputPlan, body []byte) ([]byte, error)
	// Log receives a line per run, lossy translations and errors; nil
	// discards.
	Log *zap.Logger
	// QuietTranslationWarnings leaves the lossy translations out of Log
	// (--quiet-translation-warnings); the taps still see them (Warned).
	QuietTranslationWarnings bool
	// CORS, when set, is the route's cross-origin policy, applied to
	// preflights and every response. nil: the producer's headers pass.
	CORS *CORS
	// Poller, when set, watches consumers' connections for a hangup and
	// wakes parked streams. One Poller serves every Relay of a process;
	// close it after the runs ended. nil: a goroutine per stream watches
	// the consumer, and the connection is closed at the stream's end.
	Poller *Poller
	// ReuseGoroutines serves a connection's next request on the stream's
	// goroutine, and (with Poller) parks a stream whose producer is silent
	// for a second. false: each stream runs to its end on the goroutine of
	// its hijacked connection, as net/http's do.
	ReuseGoroutines bool
	// Tap, when set, is called when a run starts and returns what watches
	// it (RunTap), or nil. End is given the report that is logged, whether
	// the run was streamed or refused.
	Tap func(*RunReport) RunTap
	// RequestTap is Tap for requests that are not runs.
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
	counts     sync.Pool // event.Counts, returned once the run's tap's End returned
	base       string

	mu     sync.Mutex
	runs   map[*upstreamBody]struct{}
	ending *abortError

	noKeepAliveWarned atomic.Bool // warnNoKeepAlive's once
}

// warnNoKeepAlive logs, once per Relay, that a stream's body has no
// connection of the relay's to set a read deadline on, so no keep-alives.
func (r *Relay) warnNoKeepAlive() {
	if r.noKeepAliveWarned.CompareAndSwap(false, true) {
		r.log.Warn("no keep-alives: the Client's response bodies are not read by the relay off their connection (use NewClient)",
			zap.Duration("keepalive", r.KeepAlive))
	}
}

// DefaultConsumerStallTimeout is the ConsumerStallTimeout of a Relay that
// sets none. A consumer that reads nothing for a minute (a frozen page, a
// suspended laptop, a peer gone without a reset) occupies its producer's
// connection for nothing.
const DefaultConsumerStallTimeout = time.Minute

// DefaultBodyTimeout is the BodyTimeout of a Relay that sets none, as
// nginx's client_body_timeout.
const DefaultBodyTimeout = time.Minute

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
	// Peer is the consumer's remote address, set when the run has a tap.
	Peer net.Addr
	// TraceID and SpanID name the run in the trace the log line joins,
	// set by a tracing tap; otherwise TraceID is the consumer's
	// traceparent's, or "".
	TraceID, SpanID string
	// RunID and ThreadID are the input's.
	RunID, ThreadID string
	// URL is where the run was sent.
	URL string
	// Status is the HTTP status sent to the consumer.
	Status int
	// Consumer is the version the stream was shaped for; Producer the
	// version of the stream's last run (zero when undeclared and not
	// configured).
	Consumer, Producer negotiate.Version
	// ProducerPython is the Relay's ProducerPython.
	ProducerPython negotiate.PyRelease
	// ConsumerLearnt says how Consumer was learnt.
	ConsumerLearnt negotiate.Learnt
	// Translated reports that the last run of the stream was translated.
	Translated bool
	// Untranslated says why a successful response was passed on unread
	// (UntranslatedProtobuf, ...); "" otherwise.
	Untranslated string
	// Events and Bytes count what was written to the consumer; Runs the
	// RUN_STARTED events seen.
	Events, Bytes, Runs int
	// Terminal is the last terminal event relayed, "" when none.
	Terminal string
	// Abort is the relay's RUN_ERROR code when it ended the stream early
	// (also "consumer_gone", "consumer_stalled"), "" otherwise.
	Abort string
	// Err is the error behind Abort, if any (nil for a timeout, a hangup
	// seen before a write failed, a shutdown).
	Err error
	// Problem is the type of the problem+json response, "" when none.
	Problem string
	// Counts are the events and bytes by type and direction of a tapped,
	// streamed run; nil otherwise. Borrowed until End returns.
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

// Server returns a fasthttp server configured for the relay. Event streams
// run on hijacked connections, which the server's Shutdown does not wait
// for: use AwaitRuns.
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
		// The read buffer is not pooled while bodies are streamed
		// (bodyBudget): fasthttp cannot tell when one was read whole.
		ReduceMemoryUsage:     true,
		MaxIdleWorkerDuration: time.Second,
		Logger:                zapPrintf{r.log},
	}
	r.bodies = newBodyBudget(r.MaxBodiesInFlight, r.maxBody(), s, func(*fasthttp.RequestHeader) time.Duration { return r.bodyTimeout() })
	r.bodies.install(s)
	r.serveNextWith(s)
	return s
}

// readBufferSize is the largest request header (large Authorization headers).
const readBufferSize = 16 << 10

// serveNextWith sets the server for a stream's connection's next request;
// without one the connection is closed at the stream's end.
func (r *Relay) serveNextWith(s *fasthttp.Server) { r.srv.Store(s) }

// expect refuses an Expect: 100-continue request whose body would be
// refused, so that the body is never sent.
func (r *Relay) expect(ctx *fasthttp.RequestCtx) int {
	p := expectProblem(ctx, r.bodies, r.maxBody())
	if p == nil {
		return fasthttp.StatusContinue
	}
	r.refuseUnread(ctx, p)
	return p.Status
}

func expectProblem(ctx *fasthttp.RequestCtx, bodies *bodyBudget, limit int) *Problem {
	if p := bodies.refusedBeforeContinue(ctx); p != nil {
		return p
	}
	if ctx.Request.Header.ContentLength() > limit {
		return problemTooLarge(limit)
	}
	return nil
}

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

// refuseUnread responds p to a request refused before its body was read;
// a run by its header (isRunHeader) is reported as a run.
func (r *Relay) refuseUnread(ctx *fasthttp.RequestCtx, p *Problem) {
	r.once.Do(r.init) // it may be the Relay's first request
	if isRunHeader(ctx) {
		rep := &RunReport{Route: r.Route, RoutePrefix: r.RoutePrefix, ProducerPython: r.ProducerPython, Start: time.Now()}
		r.tapRun(ctx, rep)
		r.refuse(ctx, rep, p)
	} else {
		p.Write(ctx)
	}
	r.CORS.apply(ctx)
}

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

func problemBadRequest(kind string) *Problem {
	return &Problem{Type: "urn:agui-relay:bad-request", Title: "The request cannot be parsed", Status: fasthttp.StatusBadRequest, Detail: kind}
}

// translateInput applies TranslateInput, or the translate package's input
// chain.
func (r *Relay) translateInput(plan negotiate.InputPlan, doc *rules.Input, tap RunTap) ([]byte, error) {
	body := doc.Body()
	if r.TranslateInput != nil {
		if !plan.Translate {
			return body, nil
		}
		return r.TranslateInput(plan, body)
	}
	// The chain runs even when the versions match: activity messages never
	// reach the producer.
	if translate.InputUnchanged(plan, body) {
		return body, nil
	}
	out, run := translate.TranslateReadInput(r.translator.InputChain(plan.To), plan, doc, event.ObserverFor(r.translator.Observer, tap))
	run.Finish()
	return out, nil
}

// Handle serves one request: a run, a CORS preflight, or anything else
// proxied unchanged. It works on any fasthttp.Server; on one not made by
// Server a stream's connection is closed at the stream's end.
func (r *Relay) Handle(ctx *fasthttp.RequestCtx) {
	if servedInPlace(ctx) || refuseTransferCoding(ctx) {
		return
	}
	var body heldBody
	if !r.bodies.readBody(ctx, r.bodyTimeout(), &body) {
		return
	}
	r.serve(ctx)
	r.bodies.done(ctx, &body)
}

// serve is Handle for a request whose framing was checked.
func (r *Relay) serve(ctx *fasthttp.RequestCtx) {
	r.once.Do(r.init)
	switch t := ctx.RequestURI(); {
	case len(t) == 0 || t[0] != '/':
		// Absolute-form, authority-form or "*": appended to Upstream it
		// could name another host.
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

// isRunHeader is isRun for a request whose body was not read.
func isRunHeader(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if !ctx.IsPost() {
		return false
	}
	if len(h.ContentType()) == 0 {
		return h.ContentLength() != 0 // -1: chunked, -2: to the connection's end
	}
	return isRun(ctx)
}

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
	// Not application/octet-stream: the consumer sent no Content-Type.
	req.Header.SetNoDefaultContentType(true)
	copyRequestHeaders(&req.Header, &ctx.Request.Header)
	setForwarded(&req.Header, ctx)
	if strip {
		req.Header.Set("X-Forwarded-Prefix", r.StripPrefix)
	}
	return req
}

// upstreamURL returns uri as a string, reusing the previous run's when
// equal: one allocation less per run.
func (r *Relay) upstreamURL(uri *fasthttp.URI) string {
	full := uri.FullURI()
	if last := r.lastURL.Load(); last != nil && *last == string(full) {
		return *last
	}
	s := string(full)
	r.lastURL.Store(&s)
	return s
}

func upstreamProblem(err error) *Problem {
	var m *malformedResponseError
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

func endRequest(tap RequestTap, rep *RunReport, status int, problem string, err error) {
	if tap != nil {
		rep.Status, rep.Problem, rep.Err, rep.Duration = status, problem, err, time.Since(rep.Start)
		tap.End(rep)
	}
}

// run relays one run: admit, forward, stream.
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

// tapRun gives the run its tap (Relay.Tap) and reports whether it has one.
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

// admit judges the consumer's RunAgentInput, decides the versions and
// translates the input; false when the run was refused.
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

	// Any protocolVersion declares, even one that is not a string (then
	// judged malformed); null is absent, as 0.0.x peers send it.
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
		// An inferred version shapes the run but never refuses an input
		// the current protocol accepts (a client that leaves out tools).
		p := problemInput(errs)
		if learnt == negotiate.Inferred {
			p.Detail += "; judged as " + cv.String() + ", the newest release before protocolVersion, since the input does not declare one" +
				" (a consumer of 1.0 or newer declares it; --consumer-version names the release of consumers that do not)"
		}
		r.refuse(ctx, rep, p)
		return nil, plan, false
	}

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
// body unread; ok=false when there is none to relay.
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
	// Nor protobuf, which a producer on @ag-ui/encoder sends for */*.
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

// stream responds with the producer's event stream, shaped by a Stream on
// the hijacked connection; any other response is passed on as it is.
func (r *Relay) stream(ctx *fasthttp.RequestCtx, rep *RunReport, resp *fasthttp.Response) {
	rep.Status = resp.StatusCode()
	body2, streamed := resp.BodyStream().(fasthttp.ReadCloserWithError)
	gz, readable := ContentCoding(resp.Header.ContentEncoding())
	if rep.Status < 200 || rep.Status > 299 || !isEventStream(resp.Header.ContentType()) || !streamed || !readable {
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
		// Compressed although identity was asked for: decoded.
		ctx.Response.Header.Del(fasthttp.HeaderContentEncoding)
		body2 = &gunzipBody{body: body2}
	}
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no") // nginx in front: do not buffer
	// No server write deadline: the stream's writer sets its own.
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

// producerResponse reports ok when resp from r.do is to be relayed; else
// resp is released and p is the problem to respond with, or nil when the
// consumer left. A 101 is refused: the relay does not tunnel.
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

// releaseAbandoned releases the response for a consumer that left,
// closing its body and so its connection.
func releaseAbandoned(resp *fasthttp.Response, err error) {
	if err == nil {
		if b, ok := resp.BodyStream().(fasthttp.ReadCloserWithError); ok {
			b.CloseWithError(errConsumerGone) //nolint:errcheck // abandoned
		}
	}
	fasthttp.ReleaseResponse(resp)
}

// hangUp closes the connection of a consumer that left, with no
// response, as a proxy does on a client's abort.
func hangUp(ctx *fasthttp.RequestCtx) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { c.Close() }) //nolint:errcheck // nothing to tell
}

func consumerAccept(h *fasthttp.RequestHeader) []byte {
	all := h.PeekAll(fasthttp.HeaderAccept)
	if len(all) == 1 {
		return all[0]
	}
	return bytes.Join(all, []byte(","))
}

// untranslated logs that a successful response is passed on unread, and
// sets rep.Untranslated.
func (r *Relay) untranslated(rep *RunReport, resp *fasthttp.Response, accept []byte, readsSSE, readable bool) {
	ct := resp.Header.ContentType()
	var why string
	switch {
	case !readable:
		rep.Untranslated = UntranslatedEncoding
		why = "the response's content encoding is one the relay does not decode"
	case isProto(ct) && !readsSSE:
		rep.Untranslated = UntranslatedProtobuf
		why = "the consumer accepts only the AG-UI protobuf encoding, which the relay does not read: the stream is not shaped for the consumer's version"
	case isProto(ct):
		rep.Untranslated = UntranslatedProtobuf
		why = "the producer responded with the AG-UI protobuf encoding although the relay asked for text/event-stream"
	default:
		rep.Untranslated = UntranslatedOther
		why = "the response is not an event stream"
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

// acquireUpstreamResponse returns a response that does not default its
// Content-Type to text/plain.
func acquireUpstreamResponse() *fasthttp.Response {
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	return resp
}

func isEventStream(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte(mediaEventStream))
}

// refuse responds p to a run before its stream started, and reports it.
func (r *Relay) refuse(ctx *fasthttp.RequestCtx, rep *RunReport, p *Problem) {
	p.Write(ctx)
	rep.Status = p.Status
	rep.Problem = p.Type
	rep.Duration = time.Since(rep.Start)
	rep.refused = p
	r.report(rep)
}

// report is the one place a run ends: its log line and its tap's End.
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
		if m := (*malformedResponseError)(nil); errors.As(rep.Err, &m) {
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

func (r *Relay) logRun(rep *RunReport) {
	level, msg := zapcore.InfoLevel, "run"
	if rep.Abort != "" && rep.Abort != errConsumerGone.Code {
		level, msg = zapcore.WarnLevel, "run ended by the relay"
	}
	// Fields cost an allocation: made only for a line that is written.
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

func (rep *RunReport) appendTraceFields(fields []zap.Field) []zap.Field {
	if rep.TraceID != "" {
		fields = append(fields, zap.String("trace_id", rep.TraceID))
	}
	if rep.SpanID != "" {
		fields = append(fields, zap.String("span_id", rep.SpanID))
	}
	return fields
}

// VersionLabel names a version as the logs and metrics do: "unknown" for
// the zero version.
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

// EndRuns ends every run streaming now or later with a RUN_ERROR of code
// relay_shutdown: the end of a shutdown's grace period.
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
