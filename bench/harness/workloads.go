package harness

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// The workloads a run can take (Config.Workloads): the bench's own phases
// per case, and three beside it, set up as an independent harness set up
// its own (issue #23): text-only runs from a producer on net/http that
// writes each body in 16 KiB slices, the cases in alternating rounds.
const (
	// WorkloadBench is saturation, paced and idle per case.
	WorkloadBench = "bench"
	// WorkloadLong is the second saturation workload: concurrent runs of
	// one long text message each, the proxy's CPU read around each round.
	WorkloadLong = "long"
	// WorkloadRuns is the cost of a run: workers making short runs one
	// after another on kept connections.
	WorkloadRuns = "runs"
	// WorkloadFirst is the time to first event at fixed rates of new runs.
	WorkloadFirst = "first"
)

// Workloads lists every workload, in the order a run takes them.
func Workloads() []string {
	return []string{WorkloadBench, WorkloadLong, WorkloadRuns, WorkloadFirst}
}

// SecondConfig sizes the workloads beside the bench's own.
type SecondConfig struct {
	// Rounds is how many times each case is measured, the cases taking
	// turns within a round.
	Rounds int `json:"rounds"`
	// LongStreams concurrent runs of LongEvents TEXT_MESSAGE_CONTENT
	// deltas each; in the translated case every LongSubagentEvery-th delta
	// carries a subagentRunId, the message inside a subagent pair.
	LongStreams       int `json:"long_streams"`
	LongEvents        int `json:"long_content_events"`
	LongSubagentEvery int `json:"long_subagent_every"`
	// RunWorkers each make RunsPerWorker runs of RunEvents content deltas,
	// one after another on a kept connection.
	RunWorkers    int `json:"run_workers"`
	RunsPerWorker int `json:"runs_per_worker"`
	RunEvents     int `json:"run_content_events"`
	// FirstRates are the rates of new runs (per second) at which the time
	// to first event is measured, each for FirstSeconds after
	// FirstWarmup; the runs are of RunEvents deltas.
	FirstRates   []float64 `json:"first_rates"`
	FirstSeconds float64   `json:"first_seconds"`
	FirstWarmup  float64   `json:"first_warmup_s"`
	// Slice is the producer's write size.
	Slice int `json:"producer_slice_bytes"`
}

// FullSecond is the size issue #23 asks for.
func FullSecond() SecondConfig {
	return SecondConfig{Rounds: 3, LongStreams: 40, LongEvents: 40000, LongSubagentEvery: 10,
		RunWorkers: 40, RunsPerWorker: 1500, RunEvents: 5,
		FirstRates: []float64{100, 1000}, FirstSeconds: 10, FirstWarmup: 1, Slice: 16 << 10}
}

// QuickSecond checks the workloads' completeness in seconds.
func QuickSecond() SecondConfig {
	return SecondConfig{Rounds: 1, LongStreams: 4, LongEvents: 2000, LongSubagentEvery: 10,
		RunWorkers: 4, RunsPerWorker: 50, RunEvents: 5,
		FirstRates: []float64{100}, FirstSeconds: 1, FirstWarmup: 0.3, Slice: 16 << 10}
}

// secondNames are the cases of the workloads beside the bench's own.
var secondNames = []string{"direct", "nginx", "haproxy", "caddy", "tcpcopy", "fasthttp", "agui-relay", "agui-relay 1.0→0.0.45"}

// secondCases are the cases of the second workloads that Only keeps.
func secondCases(only []string) []Case {
	var out []Case
	for _, sp := range specs() {
		if slices.Contains(secondNames, sp.Name) && selected(only, sp.Name) {
			out = append(out, sp.Case)
		}
	}
	return out
}

// secondParams is what a case's runs ask the producer for: one text
// message of content deltas; the translated case's inside a subagent
// pair, every subEvery-th delta tagged.
func secondParams(c Case, content, subEvery int) synth.RunParams {
	m := synth.Mix{TextOnly: true}
	events := content + 4
	if !c.Exact && subEvery > 0 {
		m.SubagentEvery = subEvery
		events += 2
	}
	return synth.RunParams{Dialect: c.Dialect, Events: events, Mix: m}
}

// RoundResult is one measured load of a second workload.
type RoundResult struct {
	Round         int     `json:"round"`
	Seconds       float64 `json:"seconds"`
	Runs          int64   `json:"runs"`
	Events        int64   `json:"events"`
	EventsPerSec  float64 `json:"events_per_sec"`
	CPUSeconds    float64 `json:"proxy_cpu_seconds"`
	CPUPerMEvents float64 `json:"proxy_cpu_s_per_million_events"`
	CPUPerRunUS   float64 `json:"proxy_cpu_us_per_run"`
	RunsOK        int64   `json:"runs_complete"`
	RunsBad       int64   `json:"runs_incomplete"`
	RunsFailed    int64   `json:"runs_failed"`
	FirstError    string  `json:"first_error,omitempty"`
	LoadAvg       float64 `json:"loadavg_1m"`
	// The time to first event (WorkloadFirst), µs, of the runs started
	// after the warm-up.
	Rate     float64 `json:"rate_runs_per_sec,omitempty"`
	FirstN   uint64  `json:"first_event_samples,omitempty"`
	FirstP50 float64 `json:"first_event_p50_us,omitempty"`
	FirstP99 float64 `json:"first_event_p99_us,omitempty"`
}

// SecondResult is what the second workloads measured for one case.
type SecondResult struct {
	Name    string        `json:"name"`
	Proxy   Proxy         `json:"proxy"`
	Error   string        `json:"error,omitempty"`
	Skipped string        `json:"skipped,omitempty"`
	Long    []RoundResult `json:"long,omitempty"`
	Runs    []RoundResult `json:"runs,omitempty"`
	First   []RoundResult `json:"first,omitempty"`
	// Profiles are the windows under perf after the rounds (--profile).
	Profiles []WorkloadProfile `json:"profiles,omitempty"`
}

func (r RoundResult) complete() bool { return r.RunsBad == 0 && r.RunsFailed == 0 && r.RunsOK > 0 }

// runSecond runs the workloads of cfg.Workloads beside the bench's own,
// each case's proxy in front of one net/http producer, the cases taking
// turns in every round.
func runSecond(cfg Config, bin Binaries, buildErrs map[Proxy]string, work string) ([]SecondResult, error) {
	sc := cfg.Second
	prod, err := synth.StartHTTPProducer("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	prod.Slice = sc.Slice
	cases := secondCases(cfg.Only)
	res := make([]SecondResult, len(cases))
	procs := make([]*Proc, len(cases))
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.Stop()
			}
		}
	}()
	for i, c := range cases {
		res[i] = SecondResult{Name: c.Name, Proxy: c.Proxy}
		if e, ok := buildErrs[c.Proxy]; ok {
			res[i].Skipped = e
			continue
		}
		p, err := StartProxy(c, bin, prod.Addr(), work)
		if err != nil {
			res[i].Error = err.Error()
			continue
		}
		procs[i] = p
		// Warm the proxy's pools, connections and (for Node) its compiler.
		w := measureLoad(p, prod, c, secondParams(c, 200, sc.LongSubagentEvery), sc.RunWorkers, int64(4*sc.RunWorkers), 0, 0)
		if !w.complete() {
			res[i].Error = fmt.Sprintf("warm-up: %d of %d runs complete: %s", w.RunsOK, w.Runs, w.FirstError)
			p.Stop()
			procs[i] = nil
		}
	}
	longLoad := func(p *Proc, c Case) RoundResult {
		return measureLoad(p, prod, c, secondParams(c, sc.LongEvents, sc.LongSubagentEvery), sc.LongStreams, int64(sc.LongStreams), 0, 0)
	}
	runsLoad := func(p *Proc, c Case) RoundResult {
		return measureLoad(p, prod, c, secondParams(c, sc.RunEvents, sc.LongSubagentEvery), sc.RunWorkers, int64(sc.RunWorkers*sc.RunsPerWorker), 0, 0)
	}
	cfg.logf("second workloads (%v): producer on %s (net/http, %d-byte writes), %d rounds", cfg.Workloads, prod.Addr(), sc.Slice, sc.Rounds)
	for round := 1; round <= sc.Rounds; round++ {
		for i, c := range cases {
			p := procs[i]
			if p == nil {
				continue
			}
			if slices.Contains(cfg.Workloads, WorkloadLong) {
				r := longLoad(p, c)
				r.Round = round
				cfg.logf("   round %d %-22s long: %9.0f ev/s  cpu %6.3f s/Mev  runs ok %d bad %d failed %d %s",
					round, c.Name, r.EventsPerSec, r.CPUPerMEvents, r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError)
				res[i].Long = append(res[i].Long, r)
			}
			if slices.Contains(cfg.Workloads, WorkloadRuns) {
				r := runsLoad(p, c)
				r.Round = round
				cfg.logf("   round %d %-22s runs: %7.0f runs/s  cpu %6.3f s/Mev %6.1f µs/run  runs ok %d bad %d failed %d %s",
					round, c.Name, float64(r.Runs)/r.Seconds, r.CPUPerMEvents, r.CPUPerRunUS, r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError)
				res[i].Runs = append(res[i].Runs, r)
			}
			if slices.Contains(cfg.Workloads, WorkloadFirst) {
				for _, rate := range sc.FirstRates {
					streams := max(8, int(rate/10))
					runs := int64(rate * (sc.FirstWarmup + sc.FirstSeconds))
					warm := time.Duration(sc.FirstWarmup * float64(time.Second))
					r := measureLoad(p, prod, c, secondParams(c, sc.RunEvents, sc.LongSubagentEvery), streams, runs, rate, warm)
					r.Round = round
					cfg.logf("   round %d %-22s first event at %5.0f runs/s: p50 %6.0f µs p99 %6.0f µs (%d)  runs ok %d bad %d failed %d %s",
						round, c.Name, rate, r.FirstP50, r.FirstP99, r.FirstN, r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError)
					res[i].First = append(res[i].First, r)
				}
			}
		}
	}
	// One more load of each saturation workload per proxy, under perf:
	// after the rounds, so that perf costs their figures nothing.
	for i, c := range cases {
		p := procs[i]
		if p == nil || p.Pid == 0 {
			continue
		}
		for _, wl := range profiledWorkloads(cfg) {
			load := longLoad
			if wl == WorkloadRuns {
				load = runsLoad
			}
			res[i].Profiles = append(res[i].Profiles, profileWorkload(cfg, c, p, wl, func() RoundResult { return load(p, c) }))
		}
	}
	return res, nil
}

// profiledWorkloads are the second workloads that take a window under
// perf after their rounds: with --profile, those of the run that measure
// CPU at saturation (long and runs; first measures latency).
func profiledWorkloads(cfg Config) []string {
	var out []string
	if !cfg.Profile {
		return nil
	}
	for _, w := range []string{WorkloadLong, WorkloadRuns} {
		if slices.Contains(cfg.Workloads, w) {
			out = append(out, w)
		}
	}
	return out
}

// measureLoad makes runs runs of rp through p, streams at a time (at rate
// new runs per second when rate > 0), and reads the proxy's CPU from /proc
// before the first and after the last (TreeRunNanos: the 10-ms ticks of
// /proc/<pid>/stat would be a few percent of a round). Every run is judged by its stamps;
// with warmup > 0, the time to first event of the runs begun after it is
// recorded.
func measureLoad(p *Proc, prod *synth.HTTPProducer, c Case, rp synth.RunParams, streams int, runs int64, rate float64, warmup time.Duration) RoundResult {
	plan := prod.Plan(rp.Dialect, rp.Events, rp.Mix)
	url, input := runRequest(p.Addr, p, rp, "r")
	hist := NewShardedHist()
	var recording atomic.Bool
	var mu sync.Mutex
	var recs []*Recorder
	if warmup > 0 {
		t := time.AfterFunc(warmup, func() { recording.Store(true) })
		defer t.Stop()
	}
	cpu0, cpuErr := p.runNanos()
	t0 := time.Now()
	lr, err := load.Run(context.Background(), load.Config{
		URL: url, Inputs: [][]byte{input}, Concurrency: streams, Runs: runs, Rate: rate,
		Timeouts: load.Timeouts{Connect: 10 * time.Second, Headers: 30 * time.Second, Idle: 30 * time.Second},
		Interval: time.Hour,
		Inspect: func(int) load.Inspector {
			in := &firstInspector{chk: synth.NewRunCheck(plan, c.Exact), rec: hist.Recorder(), recording: &recording}
			mu.Lock()
			recs = append(recs, in.rec)
			mu.Unlock()
			return in
		},
	})
	t1 := time.Now()
	cpu1, err1 := p.runNanos()
	r := RoundResult{Rate: rate, Seconds: t1.Sub(t0).Seconds(), LoadAvg: LoadAvg()}
	if cpuErr == nil {
		cpuErr = err1
	}
	if cpuErr != nil && err == nil {
		err = fmt.Errorf("reading the proxy's CPU: %v", cpuErr)
	}
	if err != nil {
		r.RunsFailed, r.FirstError = 1, err.Error()
		return r
	}
	mu.Lock()
	for _, rec := range recs {
		rec.Flush()
	}
	mu.Unlock()
	r.Runs, r.Events = lr.Runs, lr.Events
	r.EventsPerSec = float64(r.Events) / r.Seconds
	r.CPUSeconds = float64(cpu1-cpu0) / 1e9
	if p.Pid != 0 && r.Events > 0 {
		r.CPUPerMEvents = r.CPUSeconds / float64(r.Events) * 1e6
		r.CPUPerRunUS = r.CPUSeconds / float64(r.Runs) * 1e6
	}
	r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError = runCounts(lr)
	h := hist.Snapshot()
	r.FirstN = h.Count()
	if r.FirstN > 0 {
		r.FirstP50, r.FirstP99, _, _, _ = h.Micros()
	}
	return r
}

// runNanos is the proxy's time on a CPU so far (TreeRunNanos); 0 for
// direct.
func (p *Proc) runNanos() (int64, error) {
	if p == nil || p.Pid == 0 {
		return 0, nil
	}
	return TreeRunNanos(p.Pid)
}

// firstInspector judges a run's completeness by its stamps and records,
// while recording is set when the run begins, the time from its begin
// (just before its request is written) to its first event.
type firstInspector struct {
	chk       *synth.RunCheck
	rec       *Recorder
	recording *atomic.Bool
	begun     int64 // Unix ns; 0 when not recorded
	seen      bool
}

func (f *firstInspector) Begin() {
	f.chk.Reset()
	f.seen, f.begun = false, 0
	if f.recording.Load() {
		f.begun = time.Now().UnixNano()
	}
}

func (f *firstInspector) Event(data []byte, at int64) {
	if !f.seen {
		f.seen = true
		if f.begun > 0 {
			f.rec.Record(at - f.begun)
		}
	}
	f.chk.Event(data)
}

func (f *firstInspector) End(err error) error {
	if err != nil {
		return nil
	}
	return f.chk.Err()
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
