package metrics

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Metrics are the relay's Prometheus metrics, on a registry of their own
// (never the global default one): runs, events and bytes, translations,
// malformed and unrecognised material, upstream errors, producer
// connections discarded for unsolicited bytes, failed accepts, latencies,
// the deprecation telemetry and the Go runtime and process collectors.
//
// Hook them into a Relay with Tap (Relay.Tap = m.Tap), and into its client
// with OnUnsolicited (relay.ClientOptions.OnUnsolicited =
// m.OnUnsolicited(route)). Everything a run counts is kept in the run
// (Stream counts events and bytes by type in a fixed array) and added to
// the counters when the run ends; the latency histogram times one read in
// eight (latencySample), so that the clock is not read twice for every
// event.
//
// Label values are bounded: consumer versions are the releases the relay
// serves (a newer declaration counts as the current version); event types are the 31 event types of 1.0, the
// five THINKING_* types, "other" (any other type), "invalid" (a data frame
// without a string type) and "comment" (frames without data); shapes come
// from the translation steps' fixed vocabulary, with the shapes of the
// unrecognised-input step (which name the consumer's unknown members)
// folded into one, and at most MaxShapes distinct shapes (then "(other)");
// routes are the configuration's.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	active              *prometheus.GaugeVec
	runs                *prometheus.CounterVec
	consumerRuns        *prometheus.CounterVec
	untranslated        *prometheus.CounterVec
	events              *prometheus.CounterVec
	bytes               *prometheus.CounterVec
	translations        *prometheus.CounterVec
	material            *prometheus.CounterVec
	upstreamErrors      *prometheus.CounterVec
	unsolicitedDiscards *prometheus.CounterVec
	acceptErrors        *prometheus.CounterVec
	firstEvent          *prometheus.HistogramVec
	deprecatedRuns      *prometheus.CounterVec

	deps []deprecation // the registry, with its usage

	mu     sync.Mutex
	routes map[string]*routeMetrics
	shapes map[string]struct{}
}

// MaxShapes bounds the distinct shape label values of the translation
// metrics; shapes beyond it count as "(other)".
const MaxShapes = 512

var directionLabels = [2]string{"from_producer", "to_consumer"}

// Options configures New.
type Options struct {
	// Now is the clock of the deprecation gauges; nil means time.Now.
	Now func() time.Time
	// NoRuntime leaves out the Go runtime and process collectors.
	NoRuntime bool
}

// New creates the metrics on a new registry.
func New(o Options) *Metrics {
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		now:    o.Now,
		routes: map[string]*routeMetrics{},
		shapes: map[string]struct{}{},
	}
	if m.now == nil {
		m.now = time.Now
	}
	const ns = "agui_relay"
	route := []string{"route"}
	m.active = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "runs_active",
		Help: "Runs in flight: from the request to the end of the response."}, route)
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
		Help: "Runs ended, by outcome: finished, run_error, no_terminal (the stream ended without a terminal event), rejected (4xx problem before the producer was asked), upstream_unavailable (5xx problem), relay_busy (503 before the input was read: the relay held --max-bodies-in-flight of request bodies), passed_through (the producer's response was not an event stream), consumer_gone (the consumer went away), consumer_stalled (the consumer read nothing for --consumer-stall-timeout and was cut), or the relay's RUN_ERROR code (upstream_broken, upstream_idle_timeout, run_timeout, frame_too_large, relay_shutdown)."},
		[]string{"route", "outcome"})
	m.consumerRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "consumer_runs_total",
		Help: "Runs by the consumer version their stream was shaped for and how it was learnt: declared (RunAgentInput.protocolVersion), configured (--consumer-version), inferred (undeclared with --consumer-version auto: read as the newest release before the field). Runs refused before the consumer was read are not counted."},
		[]string{"route", "consumer", "learnt"})
	m.untranslated = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "untranslated_runs_total",
		Help: "Runs whose successful response went to the consumer as the producer sent it, unread and not shaped for the consumer's version, by reason: protobuf (the AG-UI protobuf encoding), not_event_stream (another media type), content_encoding (compressed other than gzip)."},
		[]string{"route", "reason"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_total",
		Help: "Events relayed, by event type and direction (from_producer: read from the producer; to_consumer: written to the consumer). type is a 1.0 or THINKING_* event type, other, invalid (no string type) or comment (frames without data: the producer's comments, and to_consumer also the relay's keep-alives, --keepalive)."},
		[]string{"route", "type", "direction"})
	m.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "event_bytes_total",
		Help: "Bytes of SSE frames relayed, by event type and direction, framing included."},
		[]string{"route", "type", "direction"})
	m.translations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "translations_total",
		Help: "Translations, lossy or lossless, by step, shape, direction (events or input) and version pair (from and to; unknown: a producer that predates protocolVersion)."},
		[]string{"route", "step", "shape", "direction", "from", "to", "loss"})
	m.material = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "material_total",
		Help: "Malformed and unrecognised material seen: kind malformed (input: a run refused as malformed; events: data frames without a string type, frames over --max-frame), kind unrecognised (input: material stripped for an older producer; events: events of a type no version describes)."},
		[]string{"route", "kind", "direction"})
	m.upstreamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_errors_total",
		Help: "Producer failures by kind: unreachable, timeout (no response in time), busy (--upstream-max-conns runs in flight), malformed (a response whose header cannot be parsed), http_status (a non-2xx response), broken (the stream broke), idle_timeout, frame_too_large, no_terminal (the stream ended inside a run)."},
		[]string{"route", "kind"})
	// The name keeps the older word, stray, for unsolicited: it is
	// published (docs/reference.md), and dashboards and alerts use it.
	m.unsolicitedDiscards = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_stray_discards_total",
		Help: "Connections to the producer discarded because the producer sent bytes outside any response (after a response was complete, or while the connection sat idle in the pool, found before its reuse); those bytes reached no consumer. Each is logged at WARN with the producer's address and the byte count."},
		route)
	m.acceptErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "accept_errors_total",
		Help: "Connections the relay's listener (--listen) failed to accept, by reason: emfile (the process's descriptor limit, ulimit -n, used up), enfile (the system's), enobufs, enomem (the kernel's buffers or memory), other. The relay retries after a backoff of 5 ms doubling to 1 s, as Go's net/http server does, and never stops on them."},
		[]string{"reason"})
	m.firstEvent = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_event_seconds",
		Help:    "From the consumer's request to the first event flushed to it.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, route)
	m.deprecatedRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "deprecated_shape_runs_total",
		Help: "Runs that needed the translation of a retired shape of the deprecation registry (once per run and shape), by version pair: who must upgrade before the translation expires."},
		[]string{"shape", "step", "route", "from", "to"})
	m.reg.MustRegister(m.active, m.runs, m.consumerRuns, m.untranslated, m.events, m.bytes, m.translations, m.material, m.upstreamErrors,
		m.unsolicitedDiscards, m.acceptErrors, m.firstEvent, latencyCollector{m}, m.deprecatedRuns, expiryCollector{m})
	if !o.NoRuntime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, d := range rules.Deprecations() {
		m.deps = append(m.deps, deprecation{Deprecation: d, norm: strings.ReplaceAll(d.Shape, "[]", "")})
	}
	return m
}

// AcceptError counts a connection the relay's listener failed to accept
// (agui_relay_accept_errors_total): the counted function of
// relay.RetryAccept.
func (m *Metrics) AcceptError(reason string) { m.acceptErrors.WithLabelValues(reason).Inc() }

// OnUnsolicited returns the relay.ClientOptions.OnUnsolicited of the client
// of route: it counts the connections to the producer discarded for bytes
// outside any response (agui_relay_upstream_stray_discards_total).
func (m *Metrics) OnUnsolicited(route string) func(addr string, n int) {
	if route == "" {
		route = "default"
	}
	c := m.unsolicitedDiscards.WithLabelValues(route)
	return func(string, int) { c.Inc() }
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// HTTPHandler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Handler is HTTPHandler for fasthttp (the admin server's /metrics).
func (m *Metrics) Handler() fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(m.HTTPHandler())
}

// routeMetrics are the children of one route, resolved once.
type routeMetrics struct {
	name         string
	active       prometheus.Gauge
	events       [2][event.NumLabels]prometheus.Counter
	bytes        [2][event.NumLabels]prometheus.Counter
	firstEvent   prometheus.Observer
	eventLatency *batchHistogram // exported by latencyCollector
}

func (m *Metrics) route(name string) *routeMetrics {
	if name == "" {
		name = "default"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm := m.routes[name]; rm != nil {
		return rm
	}
	rm := &routeMetrics{
		name:         name,
		active:       m.active.WithLabelValues(name),
		firstEvent:   m.firstEvent.WithLabelValues(name),
		eventLatency: newBatchHistogram(eventLatencyBuckets[:]),
	}
	for d := range rm.events {
		for i := range rm.events[d] {
			rm.events[d][i] = m.events.WithLabelValues(name, event.Label(i), directionLabels[d])
			rm.bytes[d][i] = m.bytes.WithLabelValues(name, event.Label(i), directionLabels[d])
		}
	}
	m.routes[name] = rm
	return rm
}

// shapeLabel bounds the shape label: the unrecognised-input step names the
// consumer's own members, so its shapes are folded into one; past
// MaxShapes distinct shapes, or for very long ones, "(other)".
func (m *Metrics) shapeLabel(step, shape string) string {
	if step == "unrecognised-input" {
		return "(unrecognised input material)"
	}
	if len(shape) > 160 {
		return "(other)"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.shapes[shape]; ok {
		return shape
	}
	if len(m.shapes) >= MaxShapes {
		return "(other)"
	}
	m.shapes[shape] = struct{}{}
	return shape
}

// Tap returns the tap of one run: Relay.Tap = m.Tap. The run counts under
// rep.Route ("default" when empty).
func (m *Metrics) Tap(rep *relay.RunReport) relay.RunTap {
	rm := m.route(rep.Route)
	rm.active.Inc()
	return &metricsTap{m: m, rm: rm, start: rep.Start}
}

// metricsTap counts one run; it adds to the metrics when the run ends.
type metricsTap struct {
	m  *Metrics
	rm *routeMetrics

	start     time.Time
	lastRead  time.Time // when the last read returned, when sampled is set
	reads     uint32    // reads so far
	sampled   bool      // reads are timed until a flush observes the latency of their events
	flushed   int       // events flushed so far
	streaming bool

	trans []transCount // this run's translations, by key
}

type transKey struct {
	step     string
	dir      translate.Direction
	shape    string
	from, to negotiate.Version
}

type transCount struct {
	transKey
	n, lost int
}

type depUse struct {
	i        int
	from, to negotiate.Version
}

func (t *metricsTap) Received([]byte)                                {}
func (t *metricsTap) Forwarded(negotiate.InputPlan, []byte)          {}
func (t *metricsTap) Streaming(negotiate.Version, negotiate.Version) { t.streaming = true }
func (t *metricsTap) Wrote([]byte)                                   {}

// latencySample is how often a read starts a latency sample: one read in
// latencySample, the run's first among them. A clock reading costs about
// as much as relaying an event that passes through.
const latencySample = 8

// Read times the reads of a sample: from a sampled read on, every read until
// a flush writes events (the events the last of them completed).
func (t *metricsTap) Read([]byte) {
	if t.reads%latencySample == 0 {
		t.sampled = true
	}
	t.reads++
	if t.sampled {
		t.lastRead = time.Now()
	}
}

// Flushed observes the time to the first event once, and the latency of
// the events a timed read completed.
func (t *metricsTap) Flushed(events int) {
	if events <= t.flushed {
		return
	}
	var now time.Time
	if t.flushed == 0 || t.sampled {
		now = time.Now()
	}
	if t.flushed == 0 {
		t.rm.firstEvent.Observe(now.Sub(t.start).Seconds())
	}
	if t.sampled {
		t.rm.eventLatency.observeN(now.Sub(t.lastRead).Seconds(), events-t.flushed)
		t.sampled = false
	}
	t.flushed = events
}

func (t *metricsTap) count(k transKey) *transCount {
	for i := range t.trans {
		if t.trans[i].transKey == k {
			return &t.trans[i]
		}
	}
	t.trans = append(t.trans, transCount{transKey: k})
	return &t.trans[len(t.trans)-1]
}

func (t *metricsTap) Translated(step *translate.Step, shape string, from, to negotiate.Version) {
	if step == nil {
		return
	}
	t.count(transKey{step.Name, step.Direction, shape, from, to}).n++
}

// needed lists the registry entries the run's translations needed, each
// (entry, from, to) once: worked out at the end from the run's distinct
// translations, not on each translated event.
func (t *metricsTap) needed() []depUse {
	var deps []depUse
	for _, c := range t.trans {
		if c.n == 0 { // only warned of, never translated
			continue
		}
		step := strings.TrimSuffix(c.step, "-input")
		for i := range t.m.deps {
			d := &t.m.deps[i]
			if d.Step != step || !retiredShapeMatches(d, c.shape) {
				continue
			}
			use := depUse{i, c.from, c.to}
			if !slices.Contains(deps, use) {
				deps = append(deps, use)
			}
		}
	}
	return deps
}

func (t *metricsTap) Warned(w translate.Warning) {
	t.count(transKey{w.Step, w.Direction, w.Shape, w.From, w.To}).lost += w.Count
}

// retiredShapeMatches reports whether a step's translated shape is the
// registry entry's retired shape. Steps name a shape as the registry does
// ("THINKING_START"), without the [] of arrays, or only by its last member
// when the event type is implied ("outcome:null" for
// "RUN_FINISHED.outcome:null"). A shape that fits several entries
// ("result:null": RUN_FINISHED's or SUBAGENT_FINISHED's) counts for each:
// they share the step, so the translation is needed either way. Two entries
// are named by kind: every binary part and every null media metadata.
func retiredShapeMatches(d *deprecation, shape string) bool {
	switch d.Shape {
	case "binary content part":
		return strings.Contains(shape, ".content.binary")
	case "media-part metadata:null":
		return strings.HasSuffix(shape, ".content.metadata:null")
	}
	return shape == d.Shape || shape == d.norm || strings.HasSuffix(d.norm, "."+shape)
}

func (t *metricsTap) End(rep *relay.RunReport) {
	m, rm := t.m, t.rm
	rm.active.Dec()
	route := rm.name
	if rep.Untranslated != "" {
		m.untranslated.WithLabelValues(route, rep.Untranslated).Inc()
	}
	if rep.ConsumerLearnt != negotiate.NotLearnt {
		m.consumerRuns.WithLabelValues(route, rep.Consumer.String(), rep.ConsumerLearnt.String()).Inc()
	}
	if kind := upstreamErrorKind(rep, t.streaming); kind != "" {
		m.upstreamErrors.WithLabelValues(route, kind).Inc()
	}
	if c := rep.Counts; c != nil {
		for d := range c.By {
			for i, n := range c.By[d] {
				if n.Events > 0 {
					rm.events[d][i].Add(float64(n.Events))
				}
				if n.Bytes > 0 {
					rm.bytes[d][i].Add(float64(n.Bytes))
				}
			}
		}
		if n := c.Malformed(); n > 0 {
			m.material.WithLabelValues(route, "malformed", "events").Add(float64(n))
		}
		if n := c.Unrecognised(); n > 0 {
			m.material.WithLabelValues(route, "unrecognised", "events").Add(float64(n))
		}
	}
	if rep.Abort == relay.CodeFrameTooLarge {
		m.material.WithLabelValues(route, "malformed", "events").Inc()
	}
	if rep.Problem == relay.ProblemInvalidInput {
		m.material.WithLabelValues(route, "malformed", "input").Inc()
	}
	unrecognisedInput := 0
	for _, c := range t.trans {
		if c.step == "unrecognised-input" {
			unrecognisedInput += c.n
		}
		shape := m.shapeLabel(c.step, c.shape)
		from, to, dir := relay.VersionLabel(c.from), relay.VersionLabel(c.to), c.dir.String()
		if lossless := c.n - c.lost; lossless > 0 {
			m.translations.WithLabelValues(route, c.step, shape, dir, from, to, "lossless").Add(float64(lossless))
		}
		if c.lost > 0 {
			m.translations.WithLabelValues(route, c.step, shape, dir, from, to, "lossy").Add(float64(c.lost))
		}
	}
	if unrecognisedInput > 0 {
		m.material.WithLabelValues(route, "unrecognised", "input").Add(float64(unrecognisedInput))
	}
	if deps := t.needed(); len(deps) > 0 {
		now := m.now()
		m.mu.Lock()
		for _, u := range deps {
			d := &m.deps[u.i]
			from, to := relay.VersionLabel(u.from), relay.VersionLabel(u.to)
			m.deprecatedRuns.WithLabelValues(d.Shape, d.Step, route, from, to).Inc()
			d.use(route, from, to, now)
		}
		m.mu.Unlock()
	}
	// Last: a scrape that sees the run ended sees all it counted.
	m.runs.WithLabelValues(route, runOutcome(rep, t.streaming)).Inc()
}

// runOutcome is the outcome label of a run.
func runOutcome(rep *relay.RunReport, streamed bool) string {
	switch {
	case rep.Problem != "" && rep.Status < 500:
		return "rejected"
	case rep.Problem == relay.ProblemBodiesInFlight:
		return "relay_busy"
	case rep.Problem != "":
		return "upstream_unavailable"
	case rep.Abort == relay.CodeConsumerGone && !streamed:
		return rep.Abort // gone before the producer's response header (headerWait)
	case !streamed:
		return "passed_through"
	case rep.Abort != "":
		switch rep.Abort {
		case relay.CodeConsumerGone, relay.CodeConsumerStalled, relay.CodeUpstreamBroken, relay.CodeUpstreamIdleTimeout, relay.CodeRunTimeout, relay.CodeFrameTooLarge, relay.CodeShutdown:
			return rep.Abort
		}
		return "aborted"
	case rep.Terminal == "RUN_FINISHED":
		return "finished"
	case rep.Terminal == "RUN_ERROR":
		return "run_error"
	}
	return "no_terminal"
}

// upstreamErrorKind is the upstream error a run met, "" when none.
func upstreamErrorKind(rep *relay.RunReport, streamed bool) string {
	switch rep.Problem {
	case relay.ProblemUnreachable:
		return "unreachable"
	case relay.ProblemUpstreamTimeout:
		return "timeout"
	case relay.ProblemBusy:
		return "busy"
	case relay.ProblemMalformed:
		return "malformed"
	case relay.ProblemUpgrade: // a 101: a status no run can have
		return "http_status"
	case "":
	default:
		return ""
	}
	if !streamed {
		if rep.Status != 0 && (rep.Status < 200 || rep.Status > 299) {
			return "http_status"
		}
		return ""
	}
	switch rep.Abort {
	case relay.CodeUpstreamBroken:
		return "broken"
	case relay.CodeUpstreamIdleTimeout:
		return "idle_timeout"
	case relay.CodeFrameTooLarge:
		return "frame_too_large"
	case "":
		if rep.Terminal == "" {
			return "no_terminal"
		}
	}
	return ""
}
