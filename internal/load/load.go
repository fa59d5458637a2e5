// Package load is the load generator of `agui-relay load` and of the bench:
// concurrent AG-UI runs against an endpoint, each a POST of a RunAgentInput
// answered by an event stream, with the timings, throughput, errors and
// completeness a user of an agent or a UI asks about. It speaks HTTP/1.1 on
// raw connections (one per concurrent run, kept between runs) and splits
// events as the relay does (event.Scanner), without decoding them, so that
// it costs less than what it loads and judges a stream as the relay does.
package load

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Config is one load.
type Config struct {
	// URL is the endpoint runs are posted to (http or https).
	URL string
	// Headers are sent with every run.
	Headers []Header
	// Inputs are RunAgentInput documents, taken in turn, each run with a
	// fresh threadId and runId; none means DefaultInput.
	Inputs [][]byte
	// Concurrency is how many runs are in flight at once (one connection
	// each).
	Concurrency int
	// Runs ends the load after that many runs have started; 0 means no
	// limit.
	Runs int64
	// Duration ends the load when it is over: no run starts after it, and
	// runs in flight get Drain to end before they are cut, and fail as
	// KindUnfinished. 0 means no limit; with neither Runs nor Duration the
	// load runs until Stop.
	Duration time.Duration
	Drain    time.Duration
	// Ramp spreads the start of the concurrent runs evenly over its length.
	Ramp time.Duration
	// Rate caps how many runs start per second across all of them; 0 starts
	// the next run as soon as one ends.
	Rate     float64
	Timeouts Timeouts
	// TLS configures https connections; nil verifies the server against
	// the system's roots.
	TLS *tls.Config
	// JudgeEvery judges the body of one event in that many against the 1.0
	// rules (1: every event; 0: none; JudgeAuto: every event up to
	// JudgeAutoPerSec a second across the load, a sample above), counting
	// those it finds malformed. Every run's terminal event is judged
	// whatever it says, and its order (RunJudge), but with JudgeAuto, that
	// of every run up to OrderAutoPerSec events a second across the load,
	// a sample of runs above.
	JudgeEvery int
	// Interval is the period of the time series and of Progress; 0 is one
	// second.
	Interval time.Duration
	// Progress, when set, is called every Interval with the counts so far,
	// from the load's own goroutine.
	Progress func(Progress)
	// Inspect, when set, returns for each concurrent run slot an Inspector
	// that sees every run it carries (the bench's stamp checker).
	Inspect func(slot int) Inspector
	// Record, when set, is called with every run's record as it ends (cut
	// runs too), from the slots' goroutines at once.
	Record func(RunRecord)
}

// RunRecord is one run, as --out's runs.jsonl has it: the times are
// milliseconds from the request, absent from the JSON (0 here) when they
// did not happen, so that an average over them counts only those that did.
type RunRecord struct {
	Start        float64 `json:"start_s"` // seconds from the load's start to the request
	Status       int     `json:"status"`  // HTTP status (0: none)
	Kind         string  `json:"error_kind,omitempty"`
	Error        string  `json:"error,omitempty"`
	Cut          bool    `json:"cut,omitempty"` // cut by Stop: not judged
	Events       int64   `json:"events"`
	Headers      float64 `json:"headers_ms,omitempty"`
	FirstEvent   float64 `json:"first_event_ms,omitempty"`
	FirstContent float64 `json:"first_content_ms,omitempty"`
	Run          float64 `json:"run_ms,omitempty"` // absent for a run that never ended (KindUnfinished)
	// Silent is, for a run that never ended, how long it had been silent:
	// from its last read (or its request) to the load's end.
	Silent       float64 `json:"silent_ms,omitempty"`
	IDsIgnored   bool    `json:"ids_ignored,omitempty"` // RUN_STARTED named other ids than the posted ones
	OrderChecked bool    `json:"order_checked"`         // its events' order was checked, not only its last
}

// JudgeAuto is the JudgeEvery that samples by rate: each slot judges an
// event's body when its share of JudgeAutoPerSec allows, so that a load
// at an agent's pace has every event judged and one at full speed spends
// about 1% of a core on judging, whatever its rate.
const (
	JudgeAuto       = -1
	JudgeAutoPerSec = 20000
	judgeBurst      = 32 // events a slot below its share may judge at once
)

// OrderAutoPerSec is, with JudgeAuto, how many events a second across the
// load have their run's order checked: each slot checks a run's when its
// share allows, so that every run of a load at an agent's pace is checked
// and one at full speed spends about 1% of a core on it. The other runs'
// terminal event is checked: their last event must be one.
const (
	OrderAutoPerSec = 200_000
	orderBurst      = time.Second // the share a slot below it may keep
)

// Inspector sees the runs of one slot, one at a time.
type Inspector interface {
	// Begin starts a run.
	Begin()
	// Event sees one event's data (borrowed until it returns), read at
	// Unix nanoseconds at.
	Event(data []byte, at int64)
	// End ends the run: err is the run's own error (nil when its stream
	// ended well). A non-nil return counts the run as incomplete, of kind
	// KindIncomplete, with that error as its example.
	End(err error) error
}

// DefaultInput is the RunAgentInput posted when Config.Inputs is empty: one
// user message, declared as a 1.0 consumer.
var DefaultInput = []byte(`{"threadId":"thread","runId":"run","protocolVersion":"1.0","state":{},"messages":[{"id":"u1","role":"user","content":"Hello! What can you do?"}],"tools":[],"context":[],"forwardedProps":{}}`)

// Error kinds. A run that fails counts under one kind: its first failure.
const (
	KindRefused        = "refused"         // connection refused
	KindUnreachable    = "unreachable"     // no route, no such host
	KindTLS            = "tls"             // the TLS handshake failed (an unverified certificate, not TLS)
	KindTimeoutConnect = "timeout connect" // Timeouts.Connect
	KindTimeoutHeaders = "timeout headers" // Timeouts.Headers
	KindTimeoutIdle    = "timeout idle"    // Timeouts.Idle
	KindTimeoutRun     = "timeout run"     // Timeouts.Run
	KindBroken         = "broken"          // the connection failed or closed inside the answer
	KindNotHTTP        = "not HTTP"        // the answer is not HTTP/1.x
	KindNotSSE         = "not SSE"         // 2xx, but not text/event-stream
	KindCut            = "no terminal"     // the stream ended before RUN_FINISHED or RUN_ERROR
	KindMalformed      = "malformed event" // an event the 1.0 rules find malformed (judged ones)
	KindIncomplete     = "incomplete"      // an Inspector's verdict
	// KindUnfinished is a run still in flight when the load ended (the
	// drain over, its context done): a run that hangs fails the load,
	// rather than passing unseen.
	KindUnfinished = "unfinished"
	// "http NNN": the status of an answer that is not 2xx.
	// "RUN_ERROR <code>": the run ended with a RUN_ERROR (code "-" when none).
)

// Error is a run's failure of one kind.
type Error struct {
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Progress is the state of a load while it runs.
type Progress struct {
	Elapsed               time.Duration
	Started, Done         int64 // runs
	Complete, Failed      int64 // runs done with a terminal event and no error / with an error
	InFlight              int64
	Events, Bytes         int64
	EventsPerSec, RunsSec float64       // over the last interval
	Total                 int64         // Config.Runs
	Duration              time.Duration // Config.Duration
}

// Point is one interval of the time series.
type Point struct {
	At           float64 `json:"t_s"` // seconds since the start, at the end of the interval
	Runs         int64   `json:"runs"`
	Failed       int64   `json:"failed"`
	Events       int64   `json:"events"`
	Bytes        int64   `json:"bytes"`
	EventsPerSec float64 `json:"events_per_sec"`
	// FirstEvent and FirstContent are of the judged runs whose first
	// (content) event came in the interval (a cut run's count in neither,
	// as in the totals); Run of those that ended in it.
	FirstEvent   Summary `json:"first_event"`
	FirstContent Summary `json:"first_content"`
	Run          Summary `json:"run"`
}

// Result is what a load measured.
type Result struct {
	URL         string    `json:"url"`
	Concurrency int       `json:"concurrency"`
	Started     time.Time `json:"started"`
	Seconds     float64   `json:"seconds"`
	Runs        int64     `json:"runs"`        // runs judged: ended, or unfinished at the load's end
	Complete    int64     `json:"complete"`    // ended with RUN_FINISHED or RUN_ERROR, no other error
	Finished    int64     `json:"finished"`    // of them, with RUN_FINISHED
	Interrupted int64     `json:"interrupted"` // cut by Stop: not judged
	// Unfinished counts the runs still in flight when the load ended
	// otherwise (Drain over, its context done): judged, and failed, of
	// KindUnfinished.
	Unfinished int64 `json:"unfinished"`
	Events     int64 `json:"events"`
	Bytes      int64 `json:"bytes"`
	JudgeEvery int   `json:"judge_every"` // Config.JudgeEvery; JudgeAuto is "auto" in JSON
	Judged     int64 `json:"events_judged"`
	// IDsIgnored counts the judged runs whose RUN_STARTED named a threadId
	// or runId other than the ones posted; IDsExample is the first.
	IDsIgnored int64  `json:"ids_ignored"`
	IDsExample string `json:"ids_example,omitempty"`
	// Rate is Config.Rate; StartRate the rate at which runs did start,
	// from the first to the last (0 with fewer than two).
	Rate      float64 `json:"rate,omitempty"`
	StartRate float64 `json:"start_rate,omitempty"`
	Malformed int64   `json:"events_malformed"`
	// OrderChecked counts the judged runs whose order was checked (all
	// but with JudgeAuto above OrderAutoPerSec); the others' terminal was.
	OrderChecked int64              `json:"runs_order_checked"`
	EventsSec    float64            `json:"events_per_sec"`
	BytesSec     float64            `json:"bytes_per_sec"`
	RunsSec      float64            `json:"runs_per_sec"`
	Errors       map[string]int64   `json:"errors"`   // runs by kind
	Examples     map[string]string  `json:"examples"` // the first error of each kind
	Timings      map[string]Summary `json:"timings"`  // by timing key
	Series       []Point            `json:"series"`
	Stopped      bool               `json:"stopped,omitempty"` // ended by Stop or its context rather than by Runs or Duration

	hists hists
}

// resultJSON is a Result as JSON has it: judge_every a number, or "auto"
// for JudgeAuto, as --judge-every takes it.
type resultJSON struct {
	plainResult
	JudgeEvery any `json:"judge_every"`
}

type plainResult Result // without Result's methods: no recursion

// MarshalJSON writes JudgeAuto as "auto".
func (r Result) MarshalJSON() ([]byte, error) {
	var every any = r.JudgeEvery
	if r.JudgeEvery == JudgeAuto {
		every = "auto"
	}
	return json.Marshal(resultJSON{plainResult(r), every})
}

// UnmarshalJSON reads judge_every as MarshalJSON writes it.
func (r *Result) UnmarshalJSON(b []byte) error {
	var v struct {
		*plainResult
		JudgeEvery json.RawMessage `json:"judge_every"`
	}
	v.plainResult = (*plainResult)(r)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch s := string(v.JudgeEvery); s {
	case "", "null":
	case `"auto"`:
		r.JudgeEvery = JudgeAuto
	default:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("judge_every: %s is neither \"auto\" nor a whole number", s)
		}
		r.JudgeEvery = n
	}
	return nil
}

// Summary returns one timing's distribution.
func (r *Result) Summary(t Timing) Summary { return r.Timings[timingKeys[t]] }

// Completeness is the share of judged runs that ended with a terminal
// event and no error; 1 when none ran.
func (r *Result) Completeness() float64 {
	if r.Runs == 0 {
		return 1
	}
	return float64(r.Complete) / float64(r.Runs)
}

// Failed is the number of runs that failed.
func (r *Result) Failed() int64 { return r.Runs - r.Complete }

// ErrorKinds lists the kinds of error seen, the most frequent first.
func (r *Result) ErrorKinds() []string {
	var ks []string
	for k := range r.Errors {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if r.Errors[ks[i]] != r.Errors[ks[j]] {
			return r.Errors[ks[i]] > r.Errors[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// Merge adds o (another round of the same load) to r.
func (r *Result) Merge(o *Result) {
	if r.hists[0] == nil {
		r.hists = newHists()
	}
	if r.URL == "" {
		r.URL, r.Concurrency, r.Started, r.JudgeEvery = o.URL, o.Concurrency, o.Started, o.JudgeEvery
	}
	r.Seconds += o.Seconds
	r.Runs += o.Runs
	r.Complete += o.Complete
	r.Events += o.Events
	r.Bytes += o.Bytes
	r.addJudged(o)
	r.Rate = o.Rate
	if o.StartRate > 0 && (r.StartRate == 0 || o.StartRate < r.StartRate) {
		r.StartRate = o.StartRate // the slowest round's
	}
	r.Stopped = r.Stopped || o.Stopped
	if r.Errors == nil {
		r.Errors, r.Examples = map[string]int64{}, map[string]string{}
	}
	for k, n := range o.Errors {
		r.Errors[k] += n
		if _, ok := r.Examples[k]; !ok {
			r.Examples[k] = o.Examples[k]
		}
	}
	off := 0.0
	if n := len(r.Series); n > 0 {
		off = r.Series[n-1].At
	}
	for _, p := range o.Series {
		p.At += off
		r.Series = append(r.Series, p)
	}
	if o.hists[0] != nil {
		r.hists.merge(&o.hists)
	}
	r.finish()
}

// addJudged adds o's counts of judged runs to r: the one sum of them, for
// a load's shards (at its end) and its rounds (Merge).
func (r *Result) addJudged(o *Result) {
	r.Judged += o.Judged
	r.Malformed += o.Malformed
	r.OrderChecked += o.OrderChecked
	r.Finished += o.Finished
	r.Interrupted += o.Interrupted
	r.Unfinished += o.Unfinished
	r.IDsIgnored += o.IDsIgnored
	if r.IDsExample == "" {
		r.IDsExample = o.IDsExample
	}
}

func (r *Result) finish() {
	if r.Seconds > 0 {
		r.EventsSec = float64(r.Events) / r.Seconds
		r.BytesSec = float64(r.Bytes) / r.Seconds
		r.RunsSec = float64(r.Runs) / r.Seconds
	}
	r.Timings = map[string]Summary{}
	for _, t := range Timings() {
		sum := summarize(r.hists[t])
		sum.Histogram = histogram(r.hists[t])
		r.Timings[timingKeys[t]] = sum
	}
}

// Runner is a load in progress.
type Runner struct {
	cfg    Config
	inputs []idTemplate
	start  time.Time
	prefix string

	unwatch func() bool // lets go of the caller's context at the end
	// noMore ends when no run may start any more (the duration's end, the
	// load's); issue with it, or when every run is handed out, which ends
	// only the wait of slots that hold none.
	noMore, issue context.Context
	stopIssue     context.CancelFunc
	stopRun       context.CancelFunc
	runCtx        context.Context // ends when runs in flight are cut
	ctx           context.Context // the caller's
	stopped       atomic.Bool
	stopCalled    atomic.Bool // Stop cut the runs in flight: they are not judged

	next      atomic.Int64 // runs handed out
	lastStart atomic.Int64 // Unix ns of the latest run's request
	rateMu    sync.Mutex
	rateN     int64
	started   atomic.Int64
	done      atomic.Int64
	ok        atomic.Int64
	failed    atomic.Int64
	events    atomic.Int64
	bytes     atomic.Int64

	shards []*shard
	wg     sync.WaitGroup

	// point is the index in series of the interval in progress; runFrom,
	// by slot, the interval its run in flight started in (noRun: none).
	// An interval's first-event columns are summarized once no run that
	// may have its first event there is in flight, so that only judged
	// runs count in them.
	point   atomic.Int64
	runFrom []atomic.Int64

	mu       sync.Mutex
	clients  []*Client
	errors   map[string]int64
	examples map[string]string
	series   []Point
	res      Result
	finished chan struct{}
}

// shard is the histograms a share of the slots record into, under its lock.
type shard struct {
	mu                    sync.Mutex
	total                 hists
	interval              *hdrhistogram.Histogram // the interval's whole runs, all the series needs by run
	runs, failed          int64                   // in the interval
	firsts                []firstTime
	judged, malformed     int64
	finished, interrupted int64
	unfinished            int64
	orderChecked          int64
	idsIgnored            int64
	idsExample            string
}

// firstTime is a judged run's time to its first event or first content,
// and the interval it came in.
type firstTime struct {
	point  int
	timing Timing // FirstEvent or FirstContent
	ns     int64
}

// pendingFirsts is the first times (FirstEvent, FirstContent) of the
// judged runs whose first event came in one interval, until its point can
// be summarized: as they came while few, in a histogram past
// maxRawFirsts, so that an interval held back by a long run in flight
// holds at most a histogram's worth however many runs it saw.
type pendingFirsts struct {
	raw  [2][]int64
	hist [2]*hdrhistogram.Histogram
}

// maxRawFirsts is how many times a pendingFirsts keeps of a timing before
// it records them in a histogram (newPointHist's, about 23 KB: as much).
const maxRawFirsts = 2048

func (p *pendingFirsts) add(i int, ns int64) {
	if h := p.hist[i]; h != nil {
		record(h, ns)
		return
	}
	p.raw[i] = append(p.raw[i], ns)
	if len(p.raw[i]) > maxRawFirsts {
		h := newPointHist()
		for _, v := range p.raw[i] {
			record(h, v)
		}
		p.hist[i], p.raw[i] = h, nil
	}
}

// summary summarizes timing i, recording the raw times into scratch.
func (p *pendingFirsts) summary(i int, scratch *hdrhistogram.Histogram) Summary {
	if h := p.hist[i]; h != nil {
		return summarize(h)
	}
	scratch.Reset()
	for _, ns := range p.raw[i] {
		record(scratch, ns)
	}
	return summarize(scratch)
}

// noRun is a slot's runFrom while it carries no run.
const noRun = math.MaxInt64

// CheckInput reports whether doc can be a load's RunAgentInput: a JSON
// object that the rules of the version it declares (1.0 when it declares
// none) do not find malformed. The error names the first finding's pointer
// and rule.
func CheckInput(doc []byte) error {
	t := bytes.TrimSpace(doc)
	if len(t) == 0 || t[0] != '{' || !rules.Valid(string(t)) {
		return errors.New("not a JSON object")
	}
	v := negotiate.Current
	if pv := gjson.GetBytes(t, "protocolVersion"); pv.Type == gjson.String {
		if d, err := negotiate.Parse(pv.String()); err == nil {
			v = d
		}
	}
	j := rules.JudgeInput(v, t)
	for _, f := range j.Findings {
		if f.Verdict == rules.Malformed && f.Pointer != "/threadId" && f.Pointer != "/runId" {
			ptr := f.Pointer
			if ptr == "" {
				ptr = "(whole)"
			}
			return fmt.Errorf("malformed for AG-UI %s at %s: %s", v, ptr, f.Rule)
		}
	}
	return nil
}

// Start checks cfg and starts the load; it stops when ctx ends, at Stop,
// or when cfg's runs or duration are spent.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Concurrency < 1 {
		return nil, errors.New("concurrency must be at least 1")
	}
	if _, err := NewClient(cfg.URL, cfg.Headers, cfg.Timeouts); err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	inputs := cfg.Inputs
	if len(inputs) == 0 {
		inputs = [][]byte{DefaultInput}
	}
	for i, in := range inputs {
		if err := CheckInput(in); err != nil {
			return nil, fmt.Errorf("input %d: %v", i+1, err)
		}
	}
	var b [4]byte
	rand.Read(b[:]) //nolint:errcheck // never fails
	r := &Runner{cfg: cfg, start: time.Now(), prefix: "load-" + hex.EncodeToString(b[:]) + "-",
		errors: map[string]int64{}, examples: map[string]string{}, finished: make(chan struct{})}
	runCtx, stopRun := context.WithCancel(ctx)
	r.runCtx, r.stopRun, r.ctx = runCtx, stopRun, ctx
	r.unwatch = context.AfterFunc(ctx, func() { r.stopped.Store(true) })
	noMore, stopNoMore := context.WithCancel(runCtx)
	issue, stopIssue := context.WithCancel(noMore)
	r.noMore, r.issue, r.stopIssue = noMore, issue, stopIssue
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, func() {
			stopNoMore()
			if cfg.Drain > 0 {
				time.AfterFunc(cfg.Drain, stopRun)
			} else {
				stopRun()
			}
		})
		context.AfterFunc(runCtx, func() { t.Stop() })
	}
	n := min(cfg.Concurrency, 2*runtime.GOMAXPROCS(0))
	for _, in := range inputs {
		r.inputs = append(r.inputs, newIDTemplate(in))
	}
	for i := 0; i < n; i++ {
		r.shards = append(r.shards, &shard{total: newHists(), interval: newPointHist()})
	}
	r.runFrom = make([]atomic.Int64, cfg.Concurrency)
	for i := range r.runFrom {
		r.runFrom[i].Store(noRun)
	}
	for i := 0; i < cfg.Concurrency; i++ {
		c, _ := NewClient(cfg.URL, cfg.Headers, cfg.Timeouts)
		c.SetTLS(cfg.TLS)
		r.clients = append(r.clients, c)
	}
	// Cutting the runs in flight closes their connections.
	context.AfterFunc(runCtx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.clients {
			c.Close()
		}
	})
	for i := 0; i < cfg.Concurrency; i++ {
		r.wg.Add(1)
		go r.slot(i)
	}
	go r.collect(func() { stopIssue(); stopNoMore() })
	return r, nil
}

// Run runs a load to its end and returns what it measured.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return r.Wait(), nil
}

// Stop ends the load now: no run starts, runs in flight are cut (and not
// judged: the caller ends a measurement, as the bench does, rather than
// the load ending on its own).
func (r *Runner) Stop() {
	r.stopCalled.Store(true)
	r.stopped.Store(true)
	r.stopRun()
}

// Wait returns the result once every run has ended.
func (r *Runner) Wait() *Result {
	<-r.finished
	return &r.res
}

// Progress returns the counts so far.
func (r *Runner) Progress() Progress {
	done := r.done.Load()
	return Progress{Elapsed: time.Since(r.start), Started: r.started.Load(), Done: done,
		Complete: r.ok.Load(), Failed: r.failed.Load(), InFlight: r.started.Load() - done,
		Events: r.events.Load(), Bytes: r.bytes.Load(), Total: r.cfg.Runs, Duration: r.cfg.Duration}
}

// take waits for the slot's next run to be allowed; false when none may
// start.
func (r *Runner) take() (int64, bool) {
	if r.issue.Err() != nil {
		return 0, false
	}
	k := r.next.Add(1) - 1
	if r.cfg.Runs > 0 && k >= r.cfg.Runs {
		// Every run is handed out: slots still waiting for their ramp need
		// not (one waiting for its rate holds a run).
		r.stopIssue()
		return 0, false
	}
	if r.cfg.Rate > 0 {
		r.rateMu.Lock()
		q := r.rateN
		r.rateN++
		r.rateMu.Unlock()
		due := r.start.Add(time.Duration(float64(q) / r.cfg.Rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.noMore.Done():
				t.Stop()
				return 0, false
			}
		}
	}
	// Run k was handed out: another slot that found none left since ends
	// only the wait of slots that hold none.
	return k, r.noMore.Err() == nil
}

func (r *Runner) slot(i int) {
	defer r.wg.Done()
	c := r.clients[i]
	defer c.Close()
	sh := r.shards[i%len(r.shards)]
	var in Inspector
	if r.cfg.Inspect != nil {
		in = r.cfg.Inspect(i)
	}
	if r.cfg.Ramp > 0 && i > 0 {
		t := time.NewTimer(time.Duration(int64(r.cfg.Ramp) * int64(i) / int64(r.cfg.Concurrency)))
		select {
		case <-t.C:
		case <-r.issue.Done():
			t.Stop()
			return
		}
	}
	st := &runState{r: r, sh: sh, in: in, from: &r.runFrom[i], judgeEvery: int64(r.cfg.JudgeEvery), sc: event.NewScanner(nil, 0)}
	if r.cfg.JudgeEvery == JudgeAuto {
		st.judgePeriod = int64(time.Second) * int64(r.cfg.Concurrency) / JudgeAutoPerSec
		st.orderPeriod = int64(time.Second) * int64(r.cfg.Concurrency) / OrderAutoPerSec
	}
	var body []byte // the run's input: Client.Run copies it into its request
	for n := int64(0); ; n++ {
		k, ok := r.take()
		if !ok {
			return
		}
		tpl := &r.inputs[k%int64(len(r.inputs))]
		body = tpl.fill(body[:0], r.prefix, i, n)
		st.posted = tpl.ok
		st.postedID = r.prefix + strconv.Itoa(i) + "-" + strconv.FormatInt(n, 10)
		st.run(c, body)
	}
}

// idTemplate is an input with its threadId and runId values located, so
// that each run's fresh ids are spliced in without encoding it again.
type idTemplate struct {
	doc []byte
	// at are the byte ranges of the two values, quotes included, in the
	// order they appear; thread is whether the first is the threadId.
	at     [2][2]int
	thread bool
	ok     bool // false: doc is sent as it is
}

func newIDTemplate(input []byte) idTemplate {
	doc, err := sjson.SetBytes(input, "threadId", "")
	if err == nil {
		doc, err = sjson.SetBytes(doc, "runId", "")
	}
	if err != nil {
		return idTemplate{doc: input}
	}
	th, run := gjson.GetBytes(doc, "threadId"), gjson.GetBytes(doc, "runId")
	t := idTemplate{doc: doc, ok: th.Index > 0 && run.Index > 0}
	a, b := [2]int{th.Index, th.Index + len(th.Raw)}, [2]int{run.Index, run.Index + len(run.Raw)}
	t.at, t.thread = [2][2]int{a, b}, true
	if b[0] < a[0] {
		t.at, t.thread = [2][2]int{b, a}, false
	}
	return t
}

// fill appends to buf the input with the threadId "thread-<prefix><slot>-<n>"
// and the runId "run-<prefix><slot>-<n>" (prefix and numbers need no JSON
// escape).
func (t *idTemplate) fill(buf []byte, prefix string, slot int, n int64) []byte {
	if !t.ok {
		return append(buf, t.doc...)
	}
	id := func(buf []byte, kind string) []byte {
		buf = append(buf, '"')
		buf = append(buf, kind...)
		buf = append(buf, prefix...)
		buf = strconv.AppendInt(buf, int64(slot), 10)
		buf = append(buf, '-')
		buf = strconv.AppendInt(buf, n, 10)
		return append(buf, '"')
	}
	first, second := "thread-", "run-"
	if !t.thread {
		first, second = second, first
	}
	buf = append(buf, t.doc[:t.at[0][0]]...)
	buf = id(buf, first)
	buf = append(buf, t.doc[t.at[0][1]:t.at[1][0]]...)
	buf = id(buf, second)
	return append(buf, t.doc[t.at[1][1]:]...)
}

// runState is one slot's measurement of the run it carries.
type runState struct {
	r          *Runner
	sh         *shard
	in         Inspector
	from       *atomic.Int64  // the slot's Runner.runFrom
	sc         *event.Scanner // the answer's frames, as the relay splits a producer's
	splitErr   error          // why the answer could not be split: a frame over the limit
	judge      *RunJudge
	judgeEvery int64
	judgeN     int64
	// judgePeriod, with JudgeAuto, is the slot's time between two judged
	// bodies; judgeNext the Unix ns from which the next may be judged (up
	// to judgeBurst periods in the past).
	judgePeriod, judgeNext int64
	// lastOnly: the run's order is not checked (judge.Next) but its last
	// event is (judge.Final): lastEv, borrowed from the read, and lastBuf,
	// a copy once the read is done. orderPeriod, with JudgeAuto, is the
	// slot's share of OrderAutoPerSec as time an event, orderNext the Unix
	// ns from which it may check the next run's (up to orderBurst past).
	lastOnly               bool
	orderPeriod, orderNext int64
	lastEv, lastBuf        []byte

	t0, now, last      int64 // Unix ns: request, current read, previous event
	events             int64
	firstEvAt          int // the intervals (Runner.point) the first event and
	firstContAt        int // the first content came in
	gaps               []int64
	zeroGaps           int64
	longGaps           *hdrhistogram.Histogram // the run's gaps past maxRunGaps, until it is judged
	longGapsUsed       bool
	firstEv, firstCont int64
	judged, malformed  int64
	malformedEx        string
	head               Response
	posted             bool   // the input carries this run's own ids
	postedID           string // "<prefix><slot>-<n>": the ids are "thread-"/"run-" + it
	idsIgnored         string // what RUN_STARTED said instead, "" when it said the posted ids
}

// maxRunGaps is how many gaps of a run a slot keeps as they are; the rest
// go into its longGaps histogram, so that a long run holds a bounded
// amount.
const maxRunGaps = 4096

var (
	typeTextContent = []byte("TEXT_MESSAGE_CONTENT")
	typeTextChunk   = []byte("TEXT_MESSAGE_CHUNK")
)

// frame takes one frame of the answer: an event, or a comment.
func (s *runState) frame(f event.Frame) {
	if f.HasData() {
		s.event(f.Data)
	}
}

func (s *runState) event(ev []byte) {
	now := s.now
	s.events++
	switch {
	case s.events == 1:
		s.firstEv, s.firstEvAt = now, int(s.r.point.Load())
	case now == s.last:
		// Events of one read share its time: their gaps are counted
		// together.
		s.zeroGaps++
	default:
		if len(s.gaps) == maxRunGaps {
			s.spillGaps()
		}
		s.gaps = append(s.gaps, now-s.last)
	}
	s.last = now
	var typ []byte
	switch {
	case !s.lastOnly:
		typ, _ = s.judge.Next(ev)
	case s.firstCont == 0 || s.events == 1:
		typ = rules.PeekType(ev)
		fallthrough
	default:
		s.lastEv = ev
	}
	if s.firstCont == 0 && (bytes.Equal(typ, typeTextContent) || bytes.Equal(typ, typeTextChunk)) {
		s.firstCont, s.firstContAt = now, int(s.r.point.Load())
	}
	if s.posted && s.events == 1 && string(typ) == "RUN_STARTED" {
		s.checkIDs(ev)
	}
	judge := false
	switch {
	case s.judgeEvery > 0:
		if s.judgeN++; s.judgeN >= s.judgeEvery {
			s.judgeN, judge = 0, true
		}
	case s.judgeEvery == JudgeAuto:
		// A token bucket: a slot that was below its share may judge a
		// burst (events of one read share its time).
		if low := now - judgeBurst*s.judgePeriod; s.judgeNext < low {
			s.judgeNext = low
		}
		if s.judgeNext <= now {
			s.judgeNext, judge = s.judgeNext+s.judgePeriod, true
		}
	}
	if judge {
		s.judged++
		if j := rules.JudgeEvent(negotiate.Current, ev); j.Verdict == rules.Malformed {
			if typ == nil {
				typ = rules.PeekType(ev)
			}
			s.malformed++
			if s.malformedEx == "" {
				s.malformedEx = malformedExample(typ, j)
			}
		}
	}
	if s.in != nil {
		s.in.Event(ev, now)
	}
}

// checkIDs notes when a run's RUN_STARTED names ids other than the posted
// ones: a producer that answers every run with fixed ids (a mock, a
// recording) mixes the runs up for any consumer that keys on them.
func (s *runState) checkIDs(ev []byte) {
	// The ids read are borrowed from ev (no copy), and copied only into
	// the note.
	doc := unsafe.String(unsafe.SliceData(ev), len(ev))
	th, run := gjson.Get(doc, "threadId").String(), gjson.Get(doc, "runId").String()
	p := s.postedID
	if len(th) == len("thread-")+len(p) && th[:len("thread-")] == "thread-" && th[len("thread-"):] == p &&
		len(run) == len("run-")+len(p) && run[:len("run-")] == "run-" && run[len("run-"):] == p {
		return
	}
	s.idsIgnored = fmt.Sprintf("posted threadId %q and runId %q, RUN_STARTED said %q and %q", "thread-"+p, "run-"+p, th, run)
}

func malformedExample(typ []byte, j rules.Judgement) string {
	for _, f := range j.Findings {
		if f.Verdict == rules.Malformed {
			ptr := f.Pointer
			if ptr == "" {
				ptr = "(whole)"
			}
			return fmt.Sprintf("%s %s: %s", typ, ptr, f.Rule)
		}
	}
	return string(typ)
}

func (s *runState) run(c *Client, input []byte) {
	r := s.r
	r.started.Add(1)
	s.events, s.firstEv, s.firstCont, s.judged, s.malformed, s.malformedEx, s.idsIgnored = 0, 0, 0, 0, 0, "", ""
	s.head, s.now = Response{}, 0
	s.dropGaps()
	if s.judge == nil {
		s.judge = NewRunJudge()
	} else {
		s.judge.Reset()
	}
	s.orderFor(time.Now().UnixNano())
	s.sc.Reset()
	s.splitErr = nil
	if s.in != nil {
		s.in.Begin()
	}
	var tHead int64
	// Before the first event reads the interval it comes in: see
	// Runner.runFrom.
	s.from.Store(r.point.Load())
	defer s.from.Store(noRun)
	s.t0 = time.Now().UnixNano()
	r.lastStart.Store(s.t0)
	err := c.Run(r.runCtx, input, func(h Response) {
		s.head = h
		tHead = time.Now().UnixNano()
	}, func(p []byte) {
		s.now = time.Now().UnixNano()
		before := s.events
		if s.splitErr == nil {
			s.splitErr = s.sc.Push(p, s.frame)
		}
		s.keepLast()
		r.bytes.Add(int64(len(p)))
		r.events.Add(s.events - before)
	})
	if err == nil && s.splitErr == nil {
		// A frame the answer left open at its clean end is an event, as
		// the relay delivers it.
		before := s.events
		s.splitErr = s.sc.End(s.frame)
		s.keepLast()
		r.events.Add(s.events - before)
	}
	s.judgeEnd()
	end := time.Now().UnixNano()
	cut := r.runCtx.Err() != nil && (err != nil || s.judge.Terminal() == "")
	interrupted := cut && r.stopCalled.Load()
	unfinished := cut && !interrupted
	kind, msg := "", ""
	var silent int64
	var e *Error
	switch {
	case interrupted:
	case unfinished:
		kind = KindUnfinished
		silent, msg = s.unfinished(tHead, end)
	case errors.As(err, &e):
		kind, msg = e.Kind, err.Error()
	case err != nil:
		kind, msg = KindBroken, err.Error()
	case s.splitErr != nil:
		kind, msg = KindBroken, s.splitErr.Error()
	default:
		kind, msg = s.judge.Verdict()
		if kind == "" && s.malformed > 0 {
			kind, msg = KindMalformed, s.malformedEx
		}
	}
	if s.in != nil && !interrupted {
		var runErr error
		if kind != "" {
			runErr = errors.New(msg)
		}
		if ie := s.in.End(runErr); ie != nil && kind == "" {
			kind, msg = KindIncomplete, ie.Error()
		}
	}
	sh := s.sh
	sh.mu.Lock()
	if interrupted {
		// A cut run is not judged: neither its events nor its gaps count.
		sh.interrupted++
	} else {
		s.recordGaps()
		if s.idsIgnored != "" {
			if sh.idsIgnored++; sh.idsExample == "" {
				sh.idsExample = s.idsIgnored
			}
		}
		sh.judged += s.judged
		sh.malformed += s.malformed
		if !s.lastOnly {
			sh.orderChecked++
		}
		sh.runs++
		if kind != "" {
			sh.failed++
		}
		if s.judge.Terminal() == "RUN_FINISHED" && kind == "" {
			sh.finished++
		}
		if tHead > 0 {
			record(sh.total[Headers], tHead-s.t0)
		}
		if unfinished {
			// It never ended: no whole run's time.
			sh.unfinished++
		} else {
			record(sh.total[Whole], end-s.t0)
			record(sh.interval, end-s.t0)
		}
		// The series groups first times by the interval they came in, not
		// the one the run ended in.
		if s.firstEv > 0 {
			record(sh.total[FirstEvent], s.firstEv-s.t0)
			sh.firsts = append(sh.firsts, firstTime{s.firstEvAt, FirstEvent, s.firstEv - s.t0})
		}
		if s.firstCont > 0 {
			record(sh.total[FirstContent], s.firstCont-s.t0)
			sh.firsts = append(sh.firsts, firstTime{s.firstContAt, FirstContent, s.firstCont - s.t0})
		}
	}
	sh.mu.Unlock()
	if r.cfg.Record != nil {
		ms := func(t int64) float64 {
			if t == 0 {
				return 0
			}
			// A time that happened is never written as absent.
			return max(float64(t-s.t0)/1e6, 1e-6)
		}
		rec := RunRecord{Start: float64(s.t0-r.start.UnixNano()) / 1e9, Status: s.head.Status, Kind: kind, Error: msg, Cut: interrupted,
			Events: s.events, Headers: ms(tHead), FirstEvent: ms(s.firstEv), FirstContent: ms(s.firstCont), Run: ms(end), IDsIgnored: s.idsIgnored != "", OrderChecked: !s.lastOnly && !interrupted}
		if unfinished {
			rec.Run, rec.Silent = 0, float64(silent)/1e6
		}
		if interrupted && err != nil {
			rec.Error = err.Error()
		}
		r.cfg.Record(rec)
	}
	if interrupted {
		r.started.Add(-1)
		return
	}
	r.done.Add(1)
	if kind == "" {
		r.ok.Add(1)
		return
	}
	r.failed.Add(1)
	r.mu.Lock()
	r.errors[kind]++
	if _, ok := r.examples[kind]; !ok {
		r.examples[kind] = msg
	}
	r.mu.Unlock()
	if kind != KindRefused && kind != KindUnreachable && kind != KindTimeoutConnect && kind != KindTLS {
		return
	}
	// The endpoint is not there: do not spin on it.
	t := time.NewTimer(100 * time.Millisecond)
	select {
	case <-t.C:
	case <-r.issue.Done():
		t.Stop()
	}
}

// unfinished says how a run still in flight at end had been silent: since
// its last read, its response's headers or its request.
func (s *runState) unfinished(tHead, end int64) (silent int64, msg string) {
	last, since := s.t0, "its request, without a response"
	if tHead > 0 {
		last, since = tHead, "its response's headers, without an event"
	}
	if s.now > last {
		last, since = s.now, "its last read, after "+eventCount(s.events)
	}
	why := "the drain ended"
	if s.r.ctx.Err() != nil {
		why = "the load was interrupted"
	}
	silent = max(end-last, 0)
	return silent, fmt.Sprintf("still in flight when %s, silent for %s since %s", why, time.Duration(silent).Round(time.Millisecond), since)
}

// orderFor decides whether the order of the run starting at now is
// checked: with JudgeAuto, when the slot's share of OrderAutoPerSec allows
// (a token bucket, as for bodies, of events: a run's are charged at its
// end, judgeEnd).
func (s *runState) orderFor(now int64) {
	s.lastEv, s.lastBuf = nil, s.lastBuf[:0]
	s.lastOnly = false
	if s.orderPeriod > 0 {
		s.orderNext = max(s.orderNext, now-int64(orderBurst))
		s.lastOnly = s.orderNext > now
	}
}

// judgeEnd ends the judging of a run whose stream has ended: a run whose
// order was not checked is judged by its last event; one whose order was
// is charged to the slot's share.
func (s *runState) judgeEnd() {
	switch {
	case s.lastOnly && s.events > 0:
		s.judge.Final(s.lastBuf, s.events)
	case s.lastOnly:
		s.judge.Final(nil, 0)
	case s.orderPeriod > 0:
		s.orderNext += s.events * s.orderPeriod
	}
}

// keepLast copies the last event of a read, while it is still borrowed,
// for a run whose terminal is judged by its last event.
func (s *runState) keepLast() {
	if s.lastEv != nil {
		s.lastBuf = append(s.lastBuf[:0], s.lastEv...)
		s.lastEv = nil
	}
}

// spillGaps moves the gaps kept so far into the slot's longGaps histogram.
func (s *runState) spillGaps() {
	if s.longGaps == nil {
		s.longGaps = newRunGaps()
	}
	for _, g := range s.gaps {
		record(s.longGaps, g)
	}
	s.longGapsUsed = true
	s.gaps = s.gaps[:0]
}

// dropGaps forgets the gaps of the run before.
func (s *runState) dropGaps() {
	s.gaps, s.zeroGaps = s.gaps[:0], 0
	if s.longGapsUsed {
		s.longGaps.Reset()
		s.longGapsUsed = false
	}
}

// recordGaps records the run's gaps in its shard (under the shard's lock).
func (s *runState) recordGaps() {
	for _, g := range s.gaps {
		record(s.sh.total[Gap], g)
	}
	if s.zeroGaps > 0 {
		s.sh.total[Gap].RecordValues(0, s.zeroGaps) //nolint:errcheck // 0 is in range
	}
	if s.longGapsUsed {
		s.sh.total[Gap].Merge(s.longGaps)
	}
	s.dropGaps()
}

// collect samples the time series every interval, and ends the load when
// every slot has.
func (r *Runner) collect(stopIssue context.CancelFunc) {
	slotsDone := make(chan struct{})
	go func() { r.wg.Wait(); close(slotsDone) }()
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	prevT, pointFrom := r.start, r.start // the last sample's time; the start of the last point's interval
	var prevEvents, prevBytes int64
	h := newPointHist() // the last point's interval's whole runs, merged from the shards
	// The judged runs' first times by the interval they came in, until its
	// point has them all: before summarized, the points have.
	firsts := map[int]*pendingFirsts{}
	summarized := 0
	scratch := newPointHist()
	// sample ends the interval in progress at now: a new point or, with
	// extend, the last point's continuation.
	sample := func(now time.Time, extend bool) {
		k := len(r.series)
		done := k // the points before it get no more first times than collected below
		if !extend {
			h.Reset()
			r.point.Store(int64(k + 1))
			done = k + 1
			for i := range r.runFrom {
				done = min(done, int(r.runFrom[i].Load()))
			}
		}
		var runs, failed int64
		for _, sh := range r.shards {
			sh.mu.Lock()
			h.Merge(sh.interval)
			sh.interval.Reset()
			runs += sh.runs
			failed += sh.failed
			sh.runs, sh.failed = 0, 0
			for _, f := range sh.firsts {
				at := f.point
				if extend {
					at = min(at, k-1) // the interval in progress joins the last point
				}
				fs := firsts[at]
				if fs == nil {
					fs = &pendingFirsts{}
					firsts[at] = fs
				}
				fs.add(int(f.timing-FirstEvent), f.ns)
			}
			sh.firsts = sh.firsts[:0]
			sh.mu.Unlock()
		}
		ev, by := r.events.Load(), r.bytes.Load()
		var p *Point
		if extend {
			p = &r.series[k-1]
			p.Runs += runs
			p.Failed += failed
			p.Events += ev - prevEvents
			p.Bytes += by - prevBytes
		} else {
			r.series = append(r.series, Point{Runs: runs, Failed: failed, Events: ev - prevEvents, Bytes: by - prevBytes})
			p, pointFrom = &r.series[k], prevT
		}
		p.At, p.Run = now.Sub(r.start).Seconds(), summarize(h)
		// Rates are the point's: a short last interval joins the point
		// before, its runs and events over the point's whole length.
		d := now.Sub(pointFrom).Seconds()
		if d > 0 {
			p.EventsPerSec = float64(p.Events) / d
		}
		for ; summarized < done; summarized++ {
			if fs := firsts[summarized]; fs != nil {
				for i, col := range []*Summary{&r.series[summarized].FirstEvent, &r.series[summarized].FirstContent} {
					*col = fs.summary(i, scratch)
				}
				delete(firsts, summarized)
			}
		}
		if r.cfg.Progress != nil {
			pr := r.Progress()
			pr.EventsPerSec = p.EventsPerSec
			if d > 0 {
				pr.RunsSec = float64(p.Runs) / d
			}
			r.cfg.Progress(pr)
		}
		prevT, prevEvents, prevBytes = now, ev, by
	}
wait:
	for {
		select {
		case now := <-tick.C:
			sample(now, false)
		case <-slotsDone:
			break wait
		}
	}
	// The end: every run is judged or cut. A last interval shorter than a
	// tenth of one joins the point before.
	end := time.Now()
	sample(end, end.Sub(prevT) <= r.cfg.Interval/10 && len(r.series) > 0)
	stopIssue()
	r.stopRun()
	r.unwatch()
	res := Result{URL: r.cfg.URL, Concurrency: r.cfg.Concurrency, JudgeEvery: r.cfg.JudgeEvery, Started: r.start, Seconds: end.Sub(r.start).Seconds(),
		Events: r.events.Load(), Bytes: r.bytes.Load(), Errors: r.errors, Examples: r.examples, Series: r.series,
		Stopped: r.stopped.Load(), hists: newHists()}
	for _, sh := range r.shards {
		res.hists.merge(&sh.total)
		res.addJudged(&Result{Judged: sh.judged, Malformed: sh.malformed, OrderChecked: sh.orderChecked,
			Finished: sh.finished, Interrupted: sh.interrupted, Unfinished: sh.unfinished,
			IDsIgnored: sh.idsIgnored, IDsExample: sh.idsExample})
	}
	res.Runs = r.done.Load()
	res.Complete = r.ok.Load()
	res.Rate = r.cfg.Rate
	if n := res.Runs + res.Interrupted; n > 1 {
		if d := time.Duration(r.lastStart.Load() - r.start.UnixNano()); d > 0 {
			res.StartRate = float64(n-1) / d.Seconds()
		}
	}
	res.finish()
	r.res = res
	close(r.finished)
}
