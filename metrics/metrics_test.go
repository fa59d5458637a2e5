package metrics

import (
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/internal/relaytest"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/rules"
)

// scrape reads the metrics over a socket, as Prometheus does, and parses
// the text format.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	base, stop := serveHandler(t, m.Handler())
	defer stop()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// serveHandler serves h on a free port and returns its base URL and the
// function that shuts it down.
func serveHandler(t *testing.T, h fasthttp.RequestHandler) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	go srv.Serve(ln) //nolint:errcheck
	stop = func() {
		srv.Shutdown() //nolint:errcheck
	}
	return "http://" + ln.Addr().String(), stop
}

// hasLabels says whether m's labels include labels ("k=v" each).
func hasLabels(m *dto.Metric, labels []string) bool {
	have := map[string]string{}
	for _, l := range m.Label {
		have[l.GetName()] = l.GetValue()
	}
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		if have[k] != v {
			return false
		}
	}
	return true
}

// value returns the value of the sample of family name whose labels include
// labels ("k=v" each); -1 when there is none. Histograms give their count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return -1
}

// sum adds the values of every sample of family name whose labels include
// labels.
func sum(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	total := 0.0
	for _, m := range f.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		total += m.Counter.GetValue()
	}
	return total
}

func TestMetricsAfterKnownRuns(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := New(Options{Now: func() time.Time { return now }})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "no", 500)
			return
		}
		testkit.StreamHeaders(w)
		testkit.SSE(w, relaytest.ThinkingStream...)
	}, func(r *relay.Relay) { r.Tap = m.Tap })

	var reps []*relay.RunReport
	for range 2 {
		resp := h.Post("/agent", testkit.MinimalInput)
		if out := testkit.ReadAll(t, resp); !strings.Contains(out, "REASONING_START") {
			t.Fatalf("not translated:\n%s", out)
		}
		reps = append(reps, h.Report())
	}
	if resp := h.Post("/agent", `{"threadId":"t1","runId":"r2","protocolVersion":"1.0","messages":{}}`); resp.StatusCode != 400 {
		t.Fatalf("malformed input: %d", resp.StatusCode)
	} else {
		testkit.ReadAll(t, resp)
	}
	h.Report()
	if resp := h.Post("/fail", testkit.MinimalInput); resp.StatusCode != 500 {
		t.Fatalf("failing producer: %d", resp.StatusCode)
	} else {
		testkit.ReadAll(t, resp)
	}
	h.Report()

	fams := scrape(t, m)
	check := func(want float64, name string, labels ...string) {
		t.Helper()
		if got := value(fams, name, labels...); got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	d := "route=default"
	check(2, "agui_relay_runs_total", d, "outcome=finished")
	check(1, "agui_relay_runs_total", d, "outcome=rejected")
	check(1, "agui_relay_runs_total", d, "outcome=passed_through")
	check(0, "agui_relay_runs_active", d)
	check(1, "agui_relay_upstream_errors_total", d, "kind=http_status")
	check(-1, "agui_relay_upstream_errors_total", d, "kind=no_terminal")

	// Events and bytes, by type and direction.
	from, to := "direction=from_producer", "direction=to_consumer"
	check(2, "agui_relay_events_total", d, "type=THINKING_START", from)
	check(0, "agui_relay_events_total", d, "type=THINKING_START", to)
	check(2, "agui_relay_events_total", d, "type=REASONING_START", to)
	check(4, "agui_relay_events_total", d, "type=THINKING_TEXT_MESSAGE_CONTENT", from)
	check(4, "agui_relay_events_total", d, "type=REASONING_MESSAGE_CONTENT", to)
	check(2, "agui_relay_events_total", d, "type=other", from)
	check(2, "agui_relay_events_total", d, "type=invalid", from)
	check(2, "agui_relay_events_total", d, "type=comment", from)
	check(2, "agui_relay_events_total", d, "type=comment", to)
	last := relaytest.ThinkingStream[len(relaytest.ThinkingStream)-1]
	check(float64(2*len(last)), "agui_relay_event_bytes_total", d, "type=RUN_FINISHED", from)
	check(float64(2*len(last)), "agui_relay_event_bytes_total", d, "type=RUN_FINISHED", to)
	producerBytes := 0
	for _, f := range relaytest.ThinkingStream {
		producerBytes += len(f)
	}
	if got := sum(fams, "agui_relay_event_bytes_total", d, from); got != float64(2*producerBytes) {
		t.Errorf("bytes from the producer: %v, want %d", got, 2*producerBytes)
	}
	if got, want := sum(fams, "agui_relay_event_bytes_total", d, to), float64(reps[0].Bytes+reps[1].Bytes); got != want {
		t.Errorf("bytes to the consumer: %v, want %v (the run reports)", got, want)
	}
	// Every event but the comments counts as an event of the report.
	if got, want := sum(fams, "agui_relay_events_total", d, to)-value(fams, "agui_relay_events_total", d, "type=comment", to), float64(reps[0].Events+reps[1].Events); got != want {
		t.Errorf("events to the consumer: %v, want %v", got, want)
	}
	check(2, "agui_relay_material_total", d, "kind=unrecognised", "direction=events")
	check(2, "agui_relay_material_total", d, "kind=malformed", "direction=events")
	check(1, "agui_relay_material_total", d, "kind=malformed", "direction=input")

	// Translations, by shape and version pair, lossy or lossless.
	tr := []string{d, "step=thinking-to-reasoning", "direction=events", "from=unknown", "to=1.0"}
	check(2, "agui_relay_translations_total", append(tr, "shape=THINKING_START", "loss=lossless")...)
	check(4, "agui_relay_translations_total", append(tr, "shape=THINKING_TEXT_MESSAGE_CONTENT", "loss=lossless")...)
	check(2, "agui_relay_translations_total", append(tr, "shape=THINKING_START.title", "loss=lossy")...)
	check(-1, "agui_relay_translations_total", append(tr, "shape=THINKING_START.title", "loss=lossless")...)

	// Deprecation telemetry: once per run and shape, and the countdown.
	for _, shape := range []string{"THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END", "THINKING_END"} {
		check(2, "agui_relay_deprecated_shape_runs_total", "shape="+shape, "step=thinking-to-reasoning", d, "from=unknown", "to=1.0")
	}
	check(-1, "agui_relay_deprecated_shape_runs_total", "shape=rawEvent:null")
	dep, _ := rules.LookupDeprecation("THINKING_START")
	check(dep.Expires.Sub(now).Seconds(), "agui_relay_deprecation_expiry_seconds", "shape=THINKING_START", "expires="+dep.Expires.Format(time.DateOnly))
	if n := len(fams["agui_relay_deprecation_expiry_seconds"].GetMetric()); n != len(rules.Deprecations()) {
		t.Errorf("%d expiry gauges for %d registry entries", n, len(rules.Deprecations()))
	}

	// Latencies: one first event per streamed run.
	check(2, "agui_relay_time_to_first_event_seconds", d)
	// The latency is sampled: the events of the first read of each run at
	// least, never more than every event.
	if n := value(fams, "agui_relay_event_latency_seconds", d); n < 2 || n > float64(reps[0].Events+reps[1].Events) {
		t.Errorf("%v latencies for %d events", n, reps[0].Events+reps[1].Events)
	}

	// The Go runtime and the process.
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("no Go runtime or process metrics")
	}

	// The admin endpoint's view of the same.
	rep := m.Deprecations()
	if !rep.Now.Equal(now) || len(rep.Deprecations) != len(rules.Deprecations()) {
		t.Fatalf("deprecations report: %+v", rep)
	}
	for _, u := range rep.Deprecations {
		if u.Shape != "THINKING_START" {
			if strings.HasPrefix(u.Shape, "THINKING_") != (u.Runs == 2) {
				t.Errorf("%s: %d runs", u.Shape, u.Runs)
			}
			continue
		}
		if u.Runs != 2 || !u.Live || u.LastSeen == nil || !u.LastSeen.Equal(now) || u.ExpiresInSeconds != dep.Expires.Sub(now).Seconds() ||
			len(u.Users) != 1 || u.Users[0] != (DeprecationUser{Route: "default", From: "unknown", To: "1.0", Runs: 2, LastSeen: now}) {
			t.Errorf("THINKING_START usage: %+v", u)
		}
	}
}

// A producer that cannot be reached, and one that ends its stream inside a
// run, are upstream errors of their kind.
func TestMetricsUpstreamErrors(t *testing.T) {
	m := New(Options{NoRuntime: true})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
	}, func(r *relay.Relay) { r.Tap = m.Tap })
	testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput))
	h.Report()

	closed := testkit.ClosedURL(t)
	h2 := relaytest.New(t, func(http.ResponseWriter, *http.Request) {}, func(r *relay.Relay) {
		r.Upstream = closed
		r.Tap = m.Tap
	})
	if resp := h2.Post("/agent", testkit.MinimalInput); resp.StatusCode != 502 {
		t.Errorf("unreachable producer: %d", resp.StatusCode)
	} else {
		testkit.ReadAll(t, resp)
	}
	h2.Report()

	// A response whose header cannot be parsed (issue #31: counted as
	// unreachable before).
	malformed := testkit.RawProducer(t, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n") })
	h3 := relaytest.New(t, func(http.ResponseWriter, *http.Request) {}, func(r *relay.Relay) {
		r.Upstream = malformed
		r.Tap = m.Tap
	})
	if resp := h3.Post("/agent", testkit.MinimalInput); resp.StatusCode != 502 {
		t.Errorf("malformed response: %d", resp.StatusCode)
	} else {
		testkit.ReadAll(t, resp)
	}
	h3.Report()

	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"agui_relay_upstream_errors_total", []string{"kind=no_terminal"}},
		{"agui_relay_upstream_errors_total", []string{"kind=unreachable"}},
		{"agui_relay_upstream_errors_total", []string{"kind=malformed"}},
		{"agui_relay_runs_total", []string{"outcome=no_terminal"}},
	} {
		if got := value(fams, c.name, c.labels...); got != 1 {
			t.Errorf("%s%v = %v, want 1", c.name, c.labels, got)
		}
	}
	if got := value(fams, "agui_relay_runs_total", "outcome=upstream_unavailable"); got != 2 {
		t.Errorf("agui_relay_runs_total[outcome=upstream_unavailable] = %v, want 2", got)
	}
	if fams["go_goroutines"] != nil {
		t.Error("runtime metrics with NoRuntime")
	}
}

// A streamed run the relay cut because its consumer read nothing is
// counted consumer_stalled, apart from consumer_gone, and is no producer
// failure.
func TestMetricsConsumerStalledApartFromGone(t *testing.T) {
	m := New(Options{NoRuntime: true})
	for _, abort := range []string{relay.CodeConsumerStalled, relay.CodeConsumerGone, relay.CodeConsumerStalled} {
		rep := &relay.RunReport{Route: "default", Status: 200, Start: time.Now(), Abort: abort}
		tap := m.Tap(rep)
		tap.Streaming(negotiate.Current, negotiate.Current)
		tap.End(rep)
	}
	fams := scrape(t, m)
	if got := value(fams, "agui_relay_runs_total", "outcome=consumer_stalled"); got != 2 {
		t.Errorf("runs_total{outcome=consumer_stalled} = %v, want 2", got)
	}
	if got := value(fams, "agui_relay_runs_total", "outcome=consumer_gone"); got != 1 {
		t.Errorf("runs_total{outcome=consumer_gone} = %v, want 1", got)
	}
	if f := fams["agui_relay_upstream_errors_total"]; f != nil && len(f.GetMetric()) > 0 {
		t.Errorf("upstream errors counted for consumers: %v", f.GetMetric())
	}
}

// A run the relay refused for its bodies in flight is counted relay_busy,
// apart from a producer's unavailability, and is no producer failure.
func TestMetricsRelayBusyApartFromUpstream(t *testing.T) {
	m := New(Options{NoRuntime: true})
	for _, problem := range []string{relay.ProblemBodiesInFlight, relay.ProblemUnreachable, relay.ProblemBodiesInFlight} {
		rep := &relay.RunReport{Route: "default", Status: 503, Problem: problem, Start: time.Now()}
		m.Tap(rep).End(rep)
	}
	fams := scrape(t, m)
	if got := value(fams, "agui_relay_runs_total", "outcome=relay_busy"); got != 2 {
		t.Errorf("runs_total{outcome=relay_busy} = %v, want 2", got)
	}
	if got := value(fams, "agui_relay_runs_total", "outcome=upstream_unavailable"); got != 1 {
		t.Errorf("runs_total{outcome=upstream_unavailable} = %v, want 1", got)
	}
	if got := value(fams, "agui_relay_upstream_errors_total", "kind=unreachable"); got != 1 {
		t.Errorf("upstream_errors_total{kind=unreachable} = %v, want 1", got)
	}
}

// Step shapes map onto the registry's retired shapes.
func TestRetiredShapeMatches(t *testing.T) {
	m := New(Options{NoRuntime: true})
	match := func(step, shape string) []string {
		var out []string
		for i := range m.deps {
			d := &m.deps[i]
			if d.Step == step && retiredShapeMatches(d, shape) {
				out = append(out, d.Shape)
			}
		}
		return out
	}
	for _, c := range []struct {
		step, shape string
		want        []string
	}{
		{rules.StepThinkingToReasoning, "THINKING_END", []string{"THINKING_END"}},
		{rules.StepThinkingToReasoning, "THINKING_START.title", nil},
		{rules.StepNullMeansAbsent, "rawEvent:null", []string{"rawEvent:null"}},
		{rules.StepNullMeansAbsent, "outcome:null", []string{"RUN_FINISHED.outcome:null"}},
		{rules.StepNullMeansAbsent, "result:null", []string{"RUN_FINISHED.result:null", "SUBAGENT_FINISHED.result:null"}},
		{rules.StepNullMeansAbsent, "RUN_STARTED.input.tools.parameters:null", []string{"RUN_STARTED.input.tools[].parameters:null"}},
		{rules.StepNullMeansAbsent, "MESSAGES_SNAPSHOT.messages.content.metadata:null", []string{"media-part metadata:null"}},
		{rules.StepBinaryToMedia, "RUN_STARTED.input.messages.content.binary(id only)", []string{"binary content part"}},
		{rules.StepReasoningRole, rules.ReasoningRoleAssistant, []string{rules.ReasoningRoleAssistant}},
	} {
		if got := match(c.step, c.shape); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s %q: %q, want %q", c.step, c.shape, got, c.want)
		}
	}
}

// Shape labels stay bounded.
func TestShapeLabelsAreBounded(t *testing.T) {
	m := New(Options{NoRuntime: true})
	if got := m.shapeLabel("unrecognised-input", "RunAgentInput.mySecretMember"); got != "(unrecognised input material)" {
		t.Errorf("unrecognised input shape: %q", got)
	}
	for i := range MaxShapes {
		if got := m.shapeLabel("s", "shape"+strconv.Itoa(i)); got == "(other)" {
			t.Fatalf("shape %d: (other) before MaxShapes", i)
		}
	}
	if got := m.shapeLabel("s", "one more"); got != "(other)" {
		t.Errorf("past MaxShapes: %q", got)
	}
	if got := m.shapeLabel("s", "shape7"); got != "shape7" {
		t.Errorf("a known shape past MaxShapes: %q", got)
	}
}

// GET /deprecations answers JSON over a socket.
func TestDeprecationsHandler(t *testing.T) {
	m := New(Options{NoRuntime: true})
	base, stop := serveHandler(t, m.DeprecationsHandler())
	defer stop()
	resp, err := http.Get(base + "/deprecations")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rep DeprecationsReport
	if err := json.Unmarshal(b, &rep); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v %s: %s", err, resp.Header.Get("Content-Type"), b)
	}
	if len(rep.Deprecations) != len(rules.Deprecations()) || rep.Deprecations[0].Shape != rules.Deprecations()[0].Shape ||
		rep.Deprecations[0].Users == nil || math.IsNaN(rep.Deprecations[0].ExpiresInSeconds) {
		t.Errorf("report %s", b)
	}
	post, err := http.Post(base+"/deprecations", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != 405 {
		t.Errorf("POST: %d", post.StatusCode)
	}
}

// --quiet-translation-warnings silences the log, not the metrics: lossy
// translations still count.
func TestQuietWarningsStillCount(t *testing.T) {
	m := New(Options{})
	core, logs := observer.New(zapcore.DebugLevel)
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, relaytest.ThinkingStream...)
	}, func(r *relay.Relay) {
		r.Tap = m.Tap
		r.Log, r.QuietTranslationWarnings = zap.New(core), true
	})
	testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput))
	h.Report()
	fams := scrape(t, m)
	if got := value(fams, "agui_relay_translations_total", "route=default", "step=thinking-to-reasoning",
		"shape=THINKING_START.title", "loss=lossy"); got != 1 {
		t.Errorf("lossy THINKING_START.title counted %v times, want 1", got)
	}
	if n := logs.FilterMessage("lossy translation").Len(); n != 0 {
		t.Errorf("quiet, yet %d lossy translations were logged", n)
	}
}

// TestConsumerRunsByLearnt: every run counts under the consumer version its
// stream was shaped for and how that was learnt; a run refused before its
// consumer was read does not count.
func TestConsumerRunsByLearnt(t *testing.T) {
	m := New(Options{NoRuntime: true})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
			`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, func(r *relay.Relay) { r.Tap = m.Tap })
	for _, in := range []string{
		testkit.MinimalInput, testkit.MinimalInput, // declared 1.0
		`{"threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[]}`, // undeclared: 0.0.59, inferred
		`{"threadId":"t1","runId":"r1","messages":`,                            // not JSON: refused unread
	} {
		testkit.ReadAll(t, h.Post("/agent", in))
		h.Report()
	}
	fams := scrape(t, m)
	for labels, want := range map[[2]string]float64{{"1.0", "declared"}: 2, {"0.0.59", "inferred"}: 1} {
		if v := value(fams, "agui_relay_consumer_runs_total", "consumer="+labels[0], "learnt="+labels[1]); v != want {
			t.Errorf("agui_relay_consumer_runs_total{consumer=%s,learnt=%s} = %v, want %v", labels[0], labels[1], v, want)
		}
	}
	if v := sum(fams, "agui_relay_consumer_runs_total"); v != 3 {
		t.Errorf("agui_relay_consumer_runs_total sums to %v, want 3", v)
	}
}

// TestUntranslatedRunsAreCounted: a successful response the relay passes on
// unread counts once, by why; an event stream does not.
func TestUntranslatedRunsAreCounted(t *testing.T) {
	m := New(Options{NoRuntime: true})
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			w.Header().Set("Content-Type", "application/vnd.ag-ui.event+proto")
			w.WriteHeader(200)
			io.WriteString(w, "\x00\x00\x00\x02\x08\x0b")
			return
		}
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
			`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, func(r *relay.Relay) { r.Tap = m.Tap })
	for _, accept := range []string{"application/vnd.ag-ui.event+proto", "*/*"} {
		req, _ := http.NewRequest("POST", h.URL+"/agent", strings.NewReader(testkit.MinimalInput))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		testkit.ReadAll(t, resp)
		h.Report()
	}
	fams := scrape(t, m)
	if v := value(fams, "agui_relay_untranslated_runs_total", "reason=protobuf"); v != 1 {
		t.Errorf("agui_relay_untranslated_runs_total{reason=protobuf} = %v, want 1", v)
	}
	if v := value(fams, "agui_relay_runs_total", "outcome=passed_through"); v != 1 {
		t.Errorf("agui_relay_runs_total{outcome=passed_through} = %v, want 1", v)
	}
	if v := value(fams, "agui_relay_runs_total", "outcome=finished"); v != 1 {
		t.Errorf("agui_relay_runs_total{outcome=finished} = %v, want 1", v)
	}
}
