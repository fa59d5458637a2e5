// Package demo is the agent that `agui-relay` runs in-process when no
// --upstream is given, so that a newcomer can watch a real AG-UI stream go
// through the relay. It answers every run by replaying a recorded event
// stream, paced like a live agent, in the protocol version it is asked to
// speak.
package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/synth"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Agent replays recordings. A run picks its version and scenario, in order
// of precedence, from the query (?version=0.0.40&scenario=tour), from
// forwardedProps.demo ({"version":"0.0.40","scenario":"tour"}), or from the
// Agent's defaults. The recording played is the one of the newest version
// at or below the one asked for.
//
// The scenario "synthetic" is generated rather than recorded, by the same
// producer as the benchmarks' (package synth), for load tests with no agent
// at all. Its parameters come from the query or forwardedProps.demo like
// the others: events (per run, RUN_STARTED and RUN_FINISHED included;
// default 100), rate (events per second; 0, the default, as fast as the
// consumer reads), delta (bytes of text per content delta), tools=0 and
// reasoning=0 (leave those blocks out). A version before 1.0 gets the legacy
// dialect (THINKING_*, no protocolVersion); dialect=thinking makes every
// content event a THINKING_TEXT_MESSAGE_CONTENT.
//
// Recordings are SSE files named <version>/<scenario>.sse. "$THREAD_ID" and
// "$RUN_ID" in them (quotes included) are replaced by the run's ids.
type Agent struct {
	// Recordings holds the recorded streams.
	Recordings fs.FS
	// Version is spoken when a run asks for none; zero means the newest
	// version recorded.
	Version negotiate.Version
	// Scenario is played when a run asks for none; "" means "tour".
	Scenario string
	// Pace is the pause before each event after the first; zero sends the
	// events back to back. The synthetic scenario paces by its rate instead.
	Pace time.Duration
	// Path is where runs are posted, and Path + "/capabilities" where the
	// agent is described; "" means DefaultPath. Any other path is a 404
	// that says which exist, so that a wrong path shows on the demo as it
	// would on a real agent.
	Path string

	plans sync.Map // synthetic plans by synthPlan
}

// DefaultPath is the path the demo agent serves runs on unless Agent.Path
// says otherwise: the one the README's examples post to.
const DefaultPath = "/agent"

// Synthetic is the name of the generated scenario.
const Synthetic = "synthetic"

// synthFlushBytes is how much a synthetic run at full speed buffers per
// write, as the bench's producer does.
const synthFlushBytes = 16 << 10

type synthPlan struct {
	d synth.Dialect
	n int
	m synth.Mix
}

// Versions lists the versions recorded, oldest first.
func (a *Agent) Versions() []negotiate.Version {
	entries, _ := fs.ReadDir(a.Recordings, ".")
	var vs []negotiate.Version
	for _, e := range entries {
		if v, err := negotiate.Parse(e.Name()); err == nil && e.IsDir() {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, negotiate.Version.Compare)
	return vs
}

// pick returns the recorded version a run asking for want plays.
func (a *Agent) pick(want negotiate.Version) (negotiate.Version, bool) {
	vs := a.Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		if want.IsZero() || !want.Less(vs[i]) {
			return vs[i], true
		}
	}
	return negotiate.Version{}, false
}

// Handle serves the demo agent: a POST to Path is a run, GET
// Path/capabilities describes it, anything else is 404.
func (a *Agent) Handle(ctx *fasthttp.RequestCtx) {
	p := a.Path
	if p == "" {
		p = DefaultPath
	}
	switch path := string(ctx.Path()); {
	case path == p && ctx.IsPost():
		a.run(ctx)
	case path == p+"/capabilities" && ctx.IsGet():
		a.capabilities(ctx)
	default:
		// The relay passes a producer's 404 on unchanged: this is what
		// the consumer reads.
		b, _ := json.Marshal(map[string]any{
			"title":  "demo agent: no " + string(ctx.Method()) + " " + path,
			"status": fasthttp.StatusNotFound,
			"detail": "no " + string(ctx.Method()) + " " + path + ": the demo agent answers POST " + p + " (a run) and GET " + p + "/capabilities." +
				" The relay appends a request's path and query to --upstream's base URL: with --upstream http://127.0.0.1:8000/api," +
				" POST /agent?x=1 to the relay goes to http://127.0.0.1:8000/api/agent?x=1",
		})
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetContentType("application/problem+json")
		ctx.SetBody(b)
	}
}

func (a *Agent) capabilities(ctx *fasthttp.RequestCtx) {
	var versions []string
	for _, v := range a.Versions() {
		versions = append(versions, v.String())
	}
	b, _ := json.Marshal(map[string]any{
		"name":      "agui-relay demo agent",
		"versions":  versions,
		"select":    "query version and scenario, or forwardedProps.demo {version, scenario}",
		"synthetic": "scenario=synthetic: events, rate (events/s, 0 as fast as possible), delta (bytes), tools=0, reasoning=0, dialect=thinking",
	})
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func (a *Agent) run(ctx *fasthttp.RequestCtx) {
	body := ctx.PostBody()
	if !rules.Valid(string(body)) {
		fail(ctx, fasthttp.StatusBadRequest, "the body is not JSON")
		return
	}
	in := gjson.ParseBytes(body)
	choose := func(key string) string {
		if v := ctx.QueryArgs().Peek(key); len(v) > 0 {
			return string(v)
		}
		return in.Get("forwardedProps.demo." + key).String()
	}
	scenario := choose("scenario")
	if scenario == "" {
		scenario = a.Scenario
	}
	want := a.Version
	if s := choose("version"); s != "" {
		v, err := negotiate.Parse(s)
		if err != nil {
			fail(ctx, fasthttp.StatusBadRequest, err.Error())
			return
		}
		want = v
	}
	if scenario == Synthetic {
		a.synthetic(ctx, in, want, choose)
		return
	}
	version, ok := a.pick(want)
	if !ok {
		fail(ctx, fasthttp.StatusNotFound, "no recording at or below version "+want.String())
		return
	}
	if scenario == "" {
		scenario = "tour"
	}
	rec, err := fs.ReadFile(a.Recordings, path.Join(version.String(), path.Base(scenario)+".sse"))
	if err != nil {
		fail(ctx, fasthttp.StatusNotFound, "no scenario "+scenario+" recorded for version "+version.String())
		return
	}
	rec = substitute(rec, "$THREAD_ID", in.Get("threadId").String())
	rec = substitute(rec, "$RUN_ID", in.Get("runId").String())

	pace := a.Pace
	stream(ctx, func(w *bufio.Writer) { play(w, rec, pace) })
}

// stream answers with an event stream that write produces.
func stream(ctx *fasthttp.RequestCtx, write func(w *bufio.Writer)) {
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	ctx.Response.ImmediateHeaderFlush = true
	ctx.SetWriteDeadline(time.Time{}) //nolint:errcheck // a paced stream outlasts any write timeout
	ctx.Response.SetBodyStream(fasthttp.NewBoundedStreamReader(write), -1)
}

// synthetic answers a run of the synthetic scenario.
func (a *Agent) synthetic(ctx *fasthttp.RequestCtx, in gjson.Result, want negotiate.Version, choose func(string) string) {
	p, err := synth.ParamsFrom(choose)
	if err != nil {
		fail(ctx, fasthttp.StatusBadRequest, "synthetic scenario: "+err.Error())
		return
	}
	if p.Idle {
		fail(ctx, fasthttp.StatusBadRequest, "synthetic scenario: idle runs are the bench producer's")
		return
	}
	if choose("dialect") == "" && !want.IsZero() && want.Less(negotiate.Current) {
		p.Dialect = synth.DialectLegacy
	}
	key := synthPlan{p.Dialect, p.Events, p.Mix}
	plan, ok := a.plans.Load(key)
	if !ok {
		plan, _ = a.plans.LoadOrStore(key, synth.NewMixedPlan(p.Dialect, p.Events, p.Mix))
	}
	kinds := plan.(synth.Plan).Kinds
	rw := synth.RunWriter{D: p.Dialect, Thread: jsonText(in.Get("threadId").String()),
		RunID: jsonText(in.Get("runId").String()), Delta: p.Delta}
	var interval time.Duration
	if p.Rate > 0 {
		interval = time.Duration(float64(time.Second) / p.Rate)
	}
	stream(ctx, func(w *bufio.Writer) { synth.Stream(w, kinds, &rw, interval, synthFlushBytes) }) //nolint:errcheck // a failed write is a consumer gone
}

// jsonText is s as the inside of a JSON string.
func jsonText(s string) string {
	q, _ := json.Marshal(s)
	return string(q[1 : len(q)-1])
}

// play writes the recording's frames, flushing each, pace apart. It stops
// when the consumer is gone (a write fails).
func play(w *bufio.Writer, rec []byte, pace time.Duration) {
	sc := event.NewScanner(bytes.NewReader(rec), len(rec))
	events := 0
	for {
		f, err := sc.Next()
		if err != nil {
			return
		}
		if f.HasData() {
			if events > 0 && pace > 0 {
				time.Sleep(pace)
			}
			events++
		}
		if f.Canonical {
			_, err = w.Write(f.Raw)
		} else {
			_, err = w.Write(event.AppendFrame(nil, f.Fields, f.Data))
		}
		if err != nil || w.Flush() != nil {
			return
		}
	}
}

// substitute replaces every quoted placeholder ("$RUN_ID") by the JSON
// string of value.
func substitute(rec []byte, placeholder, value string) []byte {
	q, _ := json.Marshal(value)
	return bytes.ReplaceAll(rec, []byte(`"`+placeholder+`"`), q)
}

func fail(ctx *fasthttp.RequestCtx, status int, detail string) {
	b, _ := json.Marshal(map[string]any{"title": "demo agent: " + detail, "status": status})
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/problem+json")
	ctx.SetBody(b)
}
