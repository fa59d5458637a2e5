package harness

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sse "github.com/agui-relay/agui-relay/event" // the package name event is a test helper's here
	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// Load is one measured phase: Streams consumers each running Params runs
// back to back, for Warmup and then Measure.
type Load struct {
	Streams int
	Params  synth.RunParams
	Warmup  time.Duration
	Measure time.Duration
	Exact   bool
	// During, when set, is called as the measuring window opens; what it
	// returns is called as the window closes (a packet capture's start and
	// stop).
	During func() (end func())
}

// PhaseResult is what one phase measured. Rates and CPU cover the measuring
// window only; latency percentiles are in microseconds.
type PhaseResult struct {
	Streams       int     `json:"streams"`
	Rate          float64 `json:"rate_per_stream"`
	Seconds       float64 `json:"seconds"`
	Events        int64   `json:"events"`
	Bytes         int64   `json:"bytes"`
	EventsPerSec  float64 `json:"events_per_sec"`
	BytesPerSec   float64 `json:"bytes_per_sec"`
	CPUSeconds    float64 `json:"proxy_cpu_seconds"`
	CPUPerMEvents float64 `json:"proxy_cpu_s_per_million_events"`
	LatencyN      uint64  `json:"latency_samples"`
	P50           float64 `json:"p50_us"`
	P99           float64 `json:"p99_us"`
	P999          float64 `json:"p999_us"`
	Mean          float64 `json:"mean_us"`
	MaxLatency    float64 `json:"max_us"`
	RunsOK        int64   `json:"runs_complete"`
	RunsBad       int64   `json:"runs_incomplete"`
	RunsFailed    int64   `json:"runs_failed"`
	FirstError    string  `json:"first_error,omitempty"`
	ProxyRSSKiB   int64   `json:"proxy_rss_kib"`
	BenchCPU      float64 `json:"bench_cpu_seconds"` // producer and load generator`
	LoadAvg       float64 `json:"loadavg_1m"`
	// agui-relay's own latency in the window, read to flush (its metric,
	// sampled; ownLatency): observations and upper bounds of p50 and p99.
	OwnLatencyN uint64  `json:"relay_own_latency_samples,omitempty"`
	OwnP50      float64 `json:"relay_own_p50_le_us,omitempty"`
	OwnP99      float64 `json:"relay_own_p99_le_us,omitempty"`
	OwnError    string  `json:"relay_own_latency_error,omitempty"`
}

// RunLoad drives load against addr (the proxy, or the producer directly)
// and samples proc (nil or pid 0 for none) around the measuring window. The
// runs are the load generator's (package load); a stamp inspector on every
// slot judges each run's completeness and records each stamped event's
// latency while the window is open. Runs cut by the phase's end are not
// judged.
func RunLoad(addr string, proc *Proc, plan synth.Plan, ld Load) PhaseResult {
	res := PhaseResult{Streams: ld.Streams, Rate: ld.Params.Rate}
	var recording atomic.Bool
	hist := NewShardedHist()
	dump := os.Getenv("AGUIBENCH_DUMP")
	var ramp time.Duration
	if ld.Params.Rate > 0 {
		// Spread the streams over one event interval.
		ramp = time.Duration(float64(time.Second) / ld.Params.Rate)
	}
	var inspectors []*stampInspector
	var mu sync.Mutex
	url, input := runRequest(addr, proc, ld.Params, "r")
	r, err := load.Start(context.Background(), load.Config{
		URL: url, Inputs: [][]byte{input}, Concurrency: ld.Streams, Ramp: ramp,
		Timeouts: load.Timeouts{Connect: 10 * time.Second, Headers: 30 * time.Second, Idle: 30 * time.Second},
		Interval: time.Hour,
		Inspect: func(slot int) load.Inspector {
			in := &stampInspector{chk: synth.NewRunCheck(plan, ld.Exact), rec: hist.Recorder(), recording: &recording, dump: dump, slot: slot}
			mu.Lock()
			inspectors = append(inspectors, in)
			mu.Unlock()
			return in
		},
	})
	if err != nil {
		res.RunsFailed, res.FirstError = 1, err.Error()
		return res
	}
	time.Sleep(ld.Warmup)
	own := proc != nil && proc.Admin != ""
	var own0 buckets
	var ownErr error
	if own {
		own0, ownErr = scrapeOwnLatency(proc.Admin)
	}
	var endDuring func()
	if ld.During != nil {
		endDuring = ld.During()
	}
	s0 := proc.Sample()
	self0, _, _ := readStat(os.Getpid())
	p0, t0 := r.Progress(), time.Now()
	recording.Store(true)
	time.Sleep(ld.Measure)
	recording.Store(false)
	p1, t1 := r.Progress(), time.Now()
	s1 := proc.Sample()
	self1, _, _ := readStat(os.Getpid())
	if endDuring != nil {
		endDuring()
	}
	if own && ownErr == nil {
		var own1 buckets
		if own1, ownErr = scrapeOwnLatency(proc.Admin); ownErr == nil {
			res.OwnLatencyN, res.OwnP50, res.OwnP99, ownErr = ownLatency(own0, own1)
		}
	}
	if ownErr != nil {
		res.OwnError = ownErr.Error()
	}
	res.BenchCPU = self1 - self0
	res.LoadAvg = LoadAvg()
	r.Stop()
	lr := r.Wait()
	mu.Lock()
	for _, in := range inspectors {
		in.rec.Flush()
	}
	mu.Unlock()

	res.Seconds = t1.Sub(t0).Seconds()
	res.Events, res.Bytes = p1.Events-p0.Events, p1.Bytes-p0.Bytes
	res.EventsPerSec = float64(res.Events) / res.Seconds
	res.BytesPerSec = float64(res.Bytes) / res.Seconds
	res.CPUSeconds = s1.CPUSeconds - s0.CPUSeconds
	if res.Events > 0 && proc != nil && proc.Pid != 0 {
		res.CPUPerMEvents = res.CPUSeconds / float64(res.Events) * 1e6
	}
	res.ProxyRSSKiB = s1.RSSKiB
	h := hist.Snapshot()
	res.LatencyN = h.Count()
	res.P50, res.P99, res.P999, res.Mean, res.MaxLatency = h.Micros()
	res.RunsOK, res.RunsBad, res.RunsFailed, res.FirstError = runCounts(lr)
	return res
}

// runCounts is what a load's runs came to: complete, incomplete (the
// stamps' verdict), failed otherwise, and an example of the most frequent
// error.
func runCounts(lr *load.Result) (ok, bad, failed int64, example string) {
	ok, bad = lr.Complete, lr.Errors[load.KindIncomplete]
	if ks := lr.ErrorKinds(); len(ks) > 0 {
		example = lr.Examples[ks[0]]
	}
	return ok, bad, lr.Failed() - bad, example
}

// stampInspector judges the runs of one slot by their stamps (synth's
// RunCheck) and records each stamped event's latency, from the producer's
// stamp to the read that delivered it, while recording is set.
type stampInspector struct {
	chk       *synth.RunCheck
	rec       *Recorder
	recording *atomic.Bool
	dump      string // AGUIBENCH_DUMP: where incomplete runs' events go
	slot, run int
	events    []byte
}

func (s *stampInspector) Begin() {
	s.chk.Reset()
	s.events = s.events[:0]
	s.run++
}

func (s *stampInspector) Event(data []byte, at int64) {
	if s.dump != "" {
		s.events = append(append(append(s.events, "data: "...), data...), '\n', '\n')
	}
	if ns, stamped := s.chk.Event(data); stamped && s.recording.Load() {
		s.rec.Record(at - ns)
	}
}

func (s *stampInspector) End(err error) error {
	if err != nil {
		return nil // counted by the load under its own kind
	}
	if err := s.chk.Err(); err != nil {
		if s.dump != "" {
			os.WriteFile(fmt.Sprintf("%s/bad-%d-%d", s.dump, s.slot, s.run), s.events, 0o644)
		}
		return err
	}
	return nil
}

// runRequest is the URL a run of rp goes to through proc (at addr, the
// proxy's or the producer's) and the input posted with it: the parameters
// in the query, or, for a proxy with a fixed route, in the input.
func runRequest(addr string, proc *Proc, rp synth.RunParams, runID string) (string, []byte) {
	if proc != nil && proc.RunPath != "" {
		return "http://" + addr + proc.RunPath, InputParams(runID, rp.Query())
	}
	return "http://" + addr + rp.Path(), Input(runID)
}

// runOnce makes one run of p through proc and hands each event to onEvent.
func runOnce(proc *Proc, p synth.RunParams, runID string, t load.Timeouts, onEvent func([]byte)) error {
	url, input := runRequest(proc.Addr, proc, p, runID)
	c, err := load.NewClient(url, nil, t)
	if err != nil {
		return err
	}
	defer c.Close()
	return runEvents(c, input, onEvent)
}

// runEvents makes one run on c and hands onEvent each event's data, split
// as the relay splits a producer's answer (a frame the answer left open at
// its clean end included).
func runEvents(c *load.Client, input []byte, onEvent func([]byte)) error {
	sc := sse.NewScanner(nil, 0)
	frame := func(f sse.Frame) {
		if f.HasData() {
			onEvent(f.Data)
		}
	}
	var splitErr error
	err := c.Run(context.Background(), input, func(load.Response) {}, func(p []byte) {
		if splitErr == nil {
			splitErr = sc.Push(p, frame)
		}
	})
	if err == nil {
		err = splitErr
	}
	if err == nil {
		err = sc.End(frame)
	}
	return err
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// IdleResult is the memory a proxy holds per open, idle stream.
type IdleResult struct {
	Streams       int     `json:"streams"`
	Opened        int     `json:"opened"`
	Finished      int     `json:"finished"`
	BaseRSSKiB    int64   `json:"base_rss_kib"`
	LoadedRSSKiB  int64   `json:"loaded_rss_kib"`
	KiBPerStream  float64 `json:"kib_per_stream"`
	OpenSeconds   float64 `json:"open_seconds"`
	FirstError    string  `json:"first_error,omitempty"`
	ProxyThreads  int64   `json:"proxy_threads"`
	ProxyHWMKiB   int64   `json:"proxy_hwm_kib"`
	ProducerIdles int64   `json:"producer_idle_runs"`
}

// idleSettle is how long the streams stay idle, all open, before the
// proxy's RSS is read: long enough for a relay to have settled into how it
// holds a quiet stream (agui-relay parks one after a second), short next to
// how long an agent thinks.
const idleSettle = 3 * time.Second

// IdleMemory opens n runs through proc whose producer sends RUN_STARTED and
// then nothing, measures the proxy's RSS growth per stream, then releases
// them (each must end with its RUN_FINISHED).
func IdleMemory(proc *Proc, prod *synth.Producer, d synth.Dialect, n int, limit time.Duration) IdleResult {
	return IdleMemoryHook(proc, prod, d, n, limit, nil)
}

// IdleMemoryHook is IdleMemory calling loaded (when not nil) while the
// streams are open, after the RSS is read.
func IdleMemoryHook(proc *Proc, prod *synth.Producer, d synth.Dialect, n int, limit time.Duration, loaded func()) IdleResult {
	res := IdleResult{Streams: n}
	// Warm the proxy's pools and code paths before the baseline, and read
	// the baseline as the loaded figure is read, idleSettle after the last
	// change: a proxy's housekeeping after its warm-up (agui-relay hands
	// memory back a second after its last stream, and its first collection
	// brings the collector's own metadata, about 1 MB) is then in the
	// baseline, not charged to the streams.
	for i := 0; i < 3; i++ {
		runOnce(proc, synth.RunParams{Dialect: d, Events: 50}, "warm", load.Timeouts{Connect: 10 * time.Second, Idle: 10 * time.Second}, func([]byte) {})
	}
	time.Sleep(idleSettle)
	res.BaseRSSKiB = proc.Sample().RSSKiB

	idle := synth.RunParams{Dialect: d, Idle: true}
	var (
		opened, finished sync.WaitGroup
		nOpen, nDone     atomic.Int64
		errOnce          sync.Once
		mu               sync.Mutex
		clients          []*load.Client
	)
	setErr := func(s string) { errOnce.Do(func() { res.FirstError = s }) }
	sem := make(chan struct{}, 128) // dials in flight
	start := time.Now()
	deadline := time.After(limit)
	started := 0
launch:
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-deadline:
			break launch
		}
		url, input := runRequest(proc.Addr, proc, idle, "idle-"+strconv.Itoa(i))
		c, err := load.NewClient(url, nil, load.Timeouts{Connect: limit, Idle: limit + time.Minute})
		if err != nil {
			setErr(err.Error())
			break
		}
		mu.Lock()
		clients = append(clients, c)
		mu.Unlock()
		started++
		opened.Add(1)
		finished.Add(1)
		go func(input []byte) {
			defer finished.Done()
			once := sync.Once{}
			markOpen := func() { once.Do(func() { opened.Done(); <-sem }) }
			defer markOpen()
			chk := synth.NewRunCheck(synth.Plan{Kinds: []synth.Kind{synth.KRunStarted, synth.KRunFinished}}, true)
			err := runEvents(c, input, func(data []byte) {
				chk.Event(data)
				if chk.Started && !chk.Terminated {
					nOpen.Add(1)
					markOpen()
				}
			})
			if err == nil {
				err = chk.Err()
			}
			if err != nil {
				setErr(err.Error())
				return
			}
			nDone.Add(1)
		}(input)
	}
	allOpen := started == n && waitTimeout(&opened, limit)
	res.OpenSeconds = time.Since(start).Seconds()
	res.Opened = int(nOpen.Load())
	res.ProducerIdles = prod.IdleOpen.Load()
	if !allOpen && res.FirstError == "" {
		res.FirstError = fmt.Sprintf("only %d of %d streams opened within %s", res.Opened, n, limit)
	}
	time.Sleep(idleSettle)
	s := proc.Sample()
	res.LoadedRSSKiB, res.ProxyThreads, res.ProxyHWMKiB = s.RSSKiB, s.Threads, s.HWMKiB
	if res.Opened > 0 {
		res.KiBPerStream = float64(res.LoadedRSSKiB-res.BaseRSSKiB) / float64(res.Opened)
	}
	if loaded != nil {
		loaded()
	}
	prod.ReleaseIdle()
	if !waitTimeout(&finished, limit) {
		setErr("streams did not finish after release")
	}
	res.Finished = int(nDone.Load())
	mu.Lock()
	for _, c := range clients {
		c.Close()
	}
	mu.Unlock()
	return res
}
