package relay

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Metrics are the relay's Prometheus metrics, on a registry of their own
// (never the global default one): runs, events and bytes, translations,
// malformed and unrecognised material, upstream errors, latencies, the
// deprecation telemetry and the Go runtime and process collectors.
//
// Hook them into a Relay with Tap (Relay.Tap = m.Tap). Everything a run
// counts is kept in the run (Stream counts events and bytes by type in a
// fixed array) and added to the counters when the run ends; the latency
// histogram times one read in eight (latencySample), so that the clock is
// not read twice for every event.
//
// Label values are bounded: event types are the 31 event types of 1.0, the
// five THINKING_* types, "other" (any other type), "invalid" (a data frame
// without a string type) and "comment" (frames without data); shapes come
// from the translation steps' fixed vocabulary, with the shapes of the
// unrecognised-input step (which name the consumer's unknown members)
// folded into one, and at most MaxShapes distinct shapes (then "(other)");
// routes are the configuration's.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	active         *prometheus.GaugeVec
	runs           *prometheus.CounterVec
	events         *prometheus.CounterVec
	bytes          *prometheus.CounterVec
	translations   *prometheus.CounterVec
	material       *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	firstEvent     *prometheus.HistogramVec
	deprecatedRuns *prometheus.CounterVec

	deps []deprecation // the registry, with its usage

	mu     sync.Mutex
	routes map[string]*routeMetrics
	shapes map[string]struct{}
}

// MaxShapes bounds the distinct shape label values of the translation
// metrics; shapes beyond it count as "(other)".
const MaxShapes = 512

// Label values of the events direction.
const (
	FromProducer = 0 // events and bytes read from the producer
	ToConsumer   = 1 // events and bytes written to the consumer
)

var directionLabels = [2]string{"from_producer", "to_consumer"}

// MetricsOptions configures NewMetrics.
type MetricsOptions struct {
	// Now is the clock of the deprecation gauges; nil means time.Now.
	Now func() time.Time
	// NoRuntime leaves out the Go runtime and process collectors.
	NoRuntime bool
}

// NewMetrics creates the metrics on a new registry.
func NewMetrics(o MetricsOptions) *Metrics {
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
		Help: "Runs in flight: from the request to the end of the answer."}, route)
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
		Help: "Runs ended, by outcome: finished, run_error, no_terminal (the stream ended without a terminal event), rejected (4xx problem before the producer was asked), upstream_unavailable (5xx problem), passed_through (the producer's answer was not an event stream), consumer_gone, or the relay's RUN_ERROR code (upstream_broken, upstream_idle_timeout, run_timeout, frame_too_large, relay_shutdown)."},
		[]string{"route", "outcome"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_total",
		Help: "Events relayed, by event type and direction (from_producer: read from the producer; to_consumer: written to the consumer). type is a 1.0 or THINKING_* event type, other, invalid (no string type) or comment (frames without data)."},
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
		Help: "Producer failures by kind: unreachable, timeout (no answer in time), busy (--upstream-max-conns runs in flight), http_status (a non-2xx answer), broken (the stream broke), idle_timeout, frame_too_large, no_terminal (the stream ended inside a run)."},
		[]string{"route", "kind"})
	m.firstEvent = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_event_seconds",
		Help:    "From the consumer's request to the first event flushed to it.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, route)
	m.deprecatedRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "deprecated_shape_runs_total",
		Help: "Runs that needed the translation of a retired shape of the deprecation registry (once per run and shape), by version pair: who must upgrade before the translation expires."},
		[]string{"shape", "step", "route", "from", "to"})
	m.reg.MustRegister(m.active, m.runs, m.events, m.bytes, m.translations, m.material, m.upstreamErrors,
		m.firstEvent, latencyCollector{m}, m.deprecatedRuns, expiryCollector{m})
	if !o.NoRuntime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, d := range rules.Deprecations() {
		m.deps = append(m.deps, deprecation{Deprecation: d, norm: strings.ReplaceAll(d.Shape, "[]", "")})
	}
	return m
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
	events       [2][NumEventLabels]prometheus.Counter
	bytes        [2][NumEventLabels]prometheus.Counter
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
			rm.events[d][i] = m.events.WithLabelValues(name, eventLabels[i], directionLabels[d])
			rm.bytes[d][i] = m.bytes.WithLabelValues(name, eventLabels[i], directionLabels[d])
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
func (m *Metrics) Tap(rep *RunReport) RunTap {
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

func (t *metricsTap) End(rep *RunReport) {
	m, rm := t.m, t.rm
	rm.active.Dec()
	route := rm.name
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
		if n := c.By[FromProducer][evInvalid].Events; n > 0 {
			m.material.WithLabelValues(route, "malformed", "events").Add(float64(n))
		}
		if n := c.By[FromProducer][evOther].Events; n > 0 {
			m.material.WithLabelValues(route, "unrecognised", "events").Add(float64(n))
		}
	}
	if rep.Abort == CodeFrameTooLarge {
		m.material.WithLabelValues(route, "malformed", "events").Inc()
	}
	if rep.Problem == problemTypeInvalidInput {
		m.material.WithLabelValues(route, "malformed", "input").Inc()
	}
	unrecognisedInput := 0
	for _, c := range t.trans {
		if c.step == "unrecognised-input" {
			unrecognisedInput += c.n
		}
		shape := m.shapeLabel(c.step, c.shape)
		from, to, dir := versionOrUnknown(c.from), versionOrUnknown(c.to), c.dir.String()
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
			from, to := versionOrUnknown(u.from), versionOrUnknown(u.to)
			m.deprecatedRuns.WithLabelValues(d.Shape, d.Step, route, from, to).Inc()
			d.use(route, from, to, now)
		}
		m.mu.Unlock()
	}
	// Last: a scrape that sees the run ended sees all it counted.
	m.runs.WithLabelValues(route, runOutcome(rep, t.streaming)).Inc()
}

// runOutcome is the outcome label of a run.
func runOutcome(rep *RunReport, streamed bool) string {
	switch {
	case rep.Problem != "" && rep.Status < 500:
		return "rejected"
	case rep.Problem != "":
		return "upstream_unavailable"
	case rep.Abort == errConsumerGone.Code && !streamed:
		return rep.Abort // gone before the producer's head (headWait)
	case !streamed:
		return "passed_through"
	case rep.Abort != "":
		switch rep.Abort {
		case errConsumerGone.Code, CodeUpstreamBroken, CodeUpstreamIdleTimeout, CodeRunTimeout, CodeFrameTooLarge, CodeShutdown:
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
func upstreamErrorKind(rep *RunReport, streamed bool) string {
	switch rep.Problem {
	case problemTypeUnreachable:
		return "unreachable"
	case problemTypeUpstreamTimeout:
		return "timeout"
	case problemTypeBusy:
		return "busy"
	case problemTypeUpgrade: // a 101: a status no run can have
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
	case CodeUpstreamBroken:
		return "broken"
	case CodeUpstreamIdleTimeout:
		return "idle_timeout"
	case CodeFrameTooLarge:
		return "frame_too_large"
	case "":
		if rep.Terminal == "" {
			return "no_terminal"
		}
	}
	return ""
}

// The problem types the metrics tell apart (problem.go writes them).
const (
	problemTypeInvalidInput    = "urn:agui-relay:invalid-input"
	problemTypeUnreachable     = "urn:agui-relay:upstream-unreachable"
	problemTypeUpstreamTimeout = "urn:agui-relay:upstream-timeout"
	problemTypeBusy            = "urn:agui-relay:upstream-busy"
	problemTypeUpgrade         = "urn:agui-relay:upstream-upgrade"
)

// deprecation is one registry entry and what the relay saw of it.
type deprecation struct {
	rules.Deprecation
	norm string // Shape without the [] of arrays

	runs     int64
	lastSeen time.Time
	users    map[depUser]*depUserUse
}

type depUser struct{ route, from, to string }

type depUserUse struct {
	runs     int64
	lastSeen time.Time
}

func (d *deprecation) use(route, from, to string, now time.Time) {
	d.runs++
	d.lastSeen = now
	if d.users == nil {
		d.users = map[depUser]*depUserUse{}
	}
	k := depUser{route, from, to}
	u := d.users[k]
	if u == nil {
		u = &depUserUse{}
		d.users[k] = u
	}
	u.runs++
	u.lastSeen = now
}

// expiryCollector exports, at each scrape, the seconds until each registry
// entry's translation expires (negative once it has).
type expiryCollector struct{ m *Metrics }

var expiryDesc = prometheus.NewDesc("agui_relay_deprecation_expiry_seconds",
	"Seconds until the translation of a retired shape of the deprecation registry may be removed (negative once expired); see agui_relay_deprecated_shape_runs_total for who still needs it.",
	[]string{"shape", "step", "retired", "expires"}, nil)

func (c expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c expiryCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.m.now()
	for i := range c.m.deps {
		d := &c.m.deps[i]
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, d.Expires.Sub(now).Seconds(),
			d.Shape, d.Step, d.Retired.String(), d.Expires.Format(time.DateOnly))
	}
}

// DeprecationUsage is one registry entry with its live usage: the JSON of
// the admin endpoint GET /deprecations (see DeprecationsHandler).
type DeprecationUsage struct {
	Shape       string `json:"shape"`
	Replacement string `json:"replacement"`
	Step        string `json:"step"`
	Retired     string `json:"retired"`
	// Expires is the day the translation may be removed (YYYY-MM-DD);
	// ExpiresInSeconds counts down to it (negative once passed) and Live
	// says the translation still runs.
	Expires          string  `json:"expires"`
	ExpiresInSeconds float64 `json:"expiresInSeconds"`
	Live             bool    `json:"live"`
	// Runs counts the runs since the relay started that needed the
	// translation (once per run); LastSeen is the last one.
	Runs     int64      `json:"runs"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	// Users says who needed it: route and version pair (from: the
	// producer's version, "unknown" when it predates protocolVersion; to:
	// the consumer's).
	Users []DeprecationUser `json:"users"`
}

// DeprecationUser is one route and version pair that needed a retired
// shape's translation.
type DeprecationUser struct {
	Route    string    `json:"route"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Runs     int64     `json:"runs"`
	LastSeen time.Time `json:"lastSeen"`
}

// DeprecationsReport is the body of GET /deprecations.
type DeprecationsReport struct {
	Now          time.Time          `json:"now"`
	Deprecations []DeprecationUsage `json:"deprecations"`
}

// Deprecations returns the registry with the usage seen so far, in
// registry order (by shape); users are sorted by route and versions.
func (m *Metrics) Deprecations() DeprecationsReport {
	now := m.now()
	out := DeprecationsReport{Now: now.UTC(), Deprecations: make([]DeprecationUsage, 0, len(m.deps))}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.deps {
		d := &m.deps[i]
		u := DeprecationUsage{
			Shape: d.Shape, Replacement: d.Replacement, Step: d.Step, Retired: d.Retired.String(),
			Expires: d.Expires.Format(time.DateOnly), ExpiresInSeconds: d.Expires.Sub(now).Seconds(),
			Live: d.LiveAt(now), Runs: d.runs, Users: []DeprecationUser{},
		}
		if d.runs > 0 {
			ls := d.lastSeen.UTC()
			u.LastSeen = &ls
		}
		for k, v := range d.users {
			u.Users = append(u.Users, DeprecationUser{Route: k.route, From: k.from, To: k.to, Runs: v.runs, LastSeen: v.lastSeen.UTC()})
		}
		sort.Slice(u.Users, func(a, b int) bool {
			x, y := u.Users[a], u.Users[b]
			if x.Route != y.Route {
				return x.Route < y.Route
			}
			if x.From != y.From {
				return x.From < y.From
			}
			return x.To < y.To
		})
		out.Deprecations = append(out.Deprecations, u)
	}
	return out
}

// DeprecationsHandler serves Deprecations as JSON (GET /deprecations on the
// admin server; `agui-relay versions --admin URL` reads it).
func (m *Metrics) DeprecationsHandler() fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsGet() && !ctx.IsHead() {
			ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
			ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
			return
		}
		b, err := json.MarshalIndent(m.Deprecations(), "", "  ")
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
			return
		}
		ctx.SetContentType("application/json")
		ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
		ctx.SetBody(append(b, '\n'))
	}
}

// Event type labels: the index of a type in a run's EventCounts.
const (
	numKnownEventTypes = 36
	evOther            = numKnownEventTypes     // a type that is not below
	evInvalid          = numKnownEventTypes + 1 // a data frame without a string type
	evComment          = numKnownEventTypes + 2 // a frame without data
	// NumEventLabels is the number of event type labels.
	NumEventLabels = numKnownEventTypes + 3
)

// EventLabel returns the label of an event type index.
func EventLabel(i int) string { return eventLabels[i] }

// EventCount is what a run relayed of one event type in one direction.
type EventCount struct{ Events, Bytes int }

// EventCounts are a run's events and bytes by direction (FromProducer,
// ToConsumer) and event type index (see EventLabel), kept by the Stream
// when its Counts is set.
type EventCounts struct {
	By [2][NumEventLabels]EventCount
}

// add counts one event of label index ti (eventIndex, or evComment), n
// bytes, in direction dir.
func (c *EventCounts) add(dir, ti, n int) {
	e := &c.By[dir][ti]
	e.Events++
	e.Bytes += n
}

// eventLabels are the event type label values, by index: the 31 event
// types of 1.0, the five THINKING_* types, then other, invalid, comment.
var eventLabels = [NumEventLabels]string{
	"ACTIVITY_DELTA",
	"ACTIVITY_SNAPSHOT",
	"CUSTOM",
	"MESSAGES_SNAPSHOT",
	"RAW",
	"REASONING_ENCRYPTED_VALUE",
	"REASONING_END",
	"REASONING_MESSAGE_CHUNK",
	"REASONING_MESSAGE_CONTENT",
	"REASONING_MESSAGE_END",
	"REASONING_MESSAGE_START",
	"REASONING_START",
	"RUN_ERROR",
	"RUN_FINISHED",
	"RUN_STARTED",
	"STATE_DELTA",
	"STATE_SNAPSHOT",
	"STEP_FINISHED",
	"STEP_STARTED",
	"SUBAGENT_ERROR",
	"SUBAGENT_FINISHED",
	"SUBAGENT_STARTED",
	"TEXT_MESSAGE_CHUNK",
	"TEXT_MESSAGE_CONTENT",
	"TEXT_MESSAGE_END",
	"TEXT_MESSAGE_START",
	"TOOL_CALL_ARGS",
	"TOOL_CALL_CHUNK",
	"TOOL_CALL_END",
	"TOOL_CALL_RESULT",
	"TOOL_CALL_START",
	"THINKING_END",
	"THINKING_START",
	"THINKING_TEXT_MESSAGE_CONTENT",
	"THINKING_TEXT_MESSAGE_END",
	"THINKING_TEXT_MESSAGE_START",
	"other", "invalid", "comment",
}

// eventIndex returns the label index of an event type (PeekType's result:
// nil when the frame has no string type). A switch on string(typ) neither
// allocates nor hashes.
func eventIndex(typ []byte) int {
	if len(typ) == 0 {
		return evInvalid
	}
	switch string(typ) {
	case "ACTIVITY_DELTA":
		return 0
	case "ACTIVITY_SNAPSHOT":
		return 1
	case "CUSTOM":
		return 2
	case "MESSAGES_SNAPSHOT":
		return 3
	case "RAW":
		return 4
	case "REASONING_ENCRYPTED_VALUE":
		return 5
	case "REASONING_END":
		return 6
	case "REASONING_MESSAGE_CHUNK":
		return 7
	case "REASONING_MESSAGE_CONTENT":
		return 8
	case "REASONING_MESSAGE_END":
		return 9
	case "REASONING_MESSAGE_START":
		return 10
	case "REASONING_START":
		return 11
	case "RUN_ERROR":
		return 12
	case "RUN_FINISHED":
		return 13
	case "RUN_STARTED":
		return 14
	case "STATE_DELTA":
		return 15
	case "STATE_SNAPSHOT":
		return 16
	case "STEP_FINISHED":
		return 17
	case "STEP_STARTED":
		return 18
	case "SUBAGENT_ERROR":
		return 19
	case "SUBAGENT_FINISHED":
		return 20
	case "SUBAGENT_STARTED":
		return 21
	case "TEXT_MESSAGE_CHUNK":
		return 22
	case "TEXT_MESSAGE_CONTENT":
		return 23
	case "TEXT_MESSAGE_END":
		return 24
	case "TEXT_MESSAGE_START":
		return 25
	case "TOOL_CALL_ARGS":
		return 26
	case "TOOL_CALL_CHUNK":
		return 27
	case "TOOL_CALL_END":
		return 28
	case "TOOL_CALL_RESULT":
		return 29
	case "TOOL_CALL_START":
		return 30
	case "THINKING_END":
		return 31
	case "THINKING_START":
		return 32
	case "THINKING_TEXT_MESSAGE_CONTENT":
		return 33
	case "THINKING_TEXT_MESSAGE_END":
		return 34
	case "THINKING_TEXT_MESSAGE_START":
		return 35
	}
	return evOther
}
