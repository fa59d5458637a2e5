package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// Config is one bench run.
type Config struct {
	Mode string // "quick" or "full"
	// SatLevels are the stream counts of the saturation sweep; RefSat is
	// the one the summary table quotes.
	SatLevels   []int
	RefSat      int
	SatEvents   int // events per run at saturation
	SatWarmup   time.Duration
	SatMeasure  time.Duration
	PacedLevels []int
	RefPaced    int
	PacedRate   float64 // events per second per stream
	PacedRunSec float64 // run length at the paced rate
	PacedWarmup time.Duration
	PacedMeasur time.Duration
	IdleLevels  []int
	IdleLimit   time.Duration
	// Pin gives the proxy the last CPU and this process the others (with
	// taskset), so that the proxy and the load generator do not take each
	// other's cycles. Go proxies then run with GOMAXPROCS 1, like nginx's
	// one worker.
	Pin bool
	// FlushBytes is how much the producer buffers before each write when
	// streaming as fast as possible (0 keeps the producer's 16 KiB; 1
	// writes every event on its own, like an agent flushing each token).
	FlushBytes int
	// Only, when set, keeps the cases whose name contains one of these.
	Only []string
	// Setup installs nginx and tcpdump from Debian's packages when missing.
	Setup bool
	// Profile adds, for every proxy case, a saturation and a paced window
	// under perf (cpu-clock samples with call graphs), reported into
	// OutDir/profiles. They come after the measured windows and do not
	// change the figures.
	Profile bool
	// Capture adds, for every proxy case with a paced phase, a window at
	// each paced level up to the reference under a packet capture
	// (tcpdump), which measures how long each event spends in the proxy
	// (MeasureResidence). They come after the measured paced windows and
	// do not change them.
	Capture bool
	tcpdump string
	// Workloads are what the run takes (Workloads(); none: the bench's
	// own), Second the size of those beside it.
	Workloads []string
	Second    SecondConfig
	// Repo is the module root (where agui-relay is built from).
	Repo   string
	OutDir string
	Log    io.Writer
}

// QuickConfig checks completeness through every case in well under a
// minute; its figures are not meant to be compared.
func QuickConfig() Config {
	return Config{Mode: "quick",
		SatLevels: []int{4}, RefSat: 4, SatEvents: 300, SatWarmup: 200 * time.Millisecond, SatMeasure: 800 * time.Millisecond,
		PacedLevels: []int{20}, RefPaced: 20, PacedRate: 50, PacedRunSec: 0.5, PacedWarmup: 300 * time.Millisecond, PacedMeasur: time.Second,
		IdleLevels: []int{20}, IdleLimit: 20 * time.Second, Second: QuickSecond()}
}

// FullConfig takes the figures the README quotes.
func FullConfig() Config {
	return Config{Mode: "full",
		SatLevels: []int{1, 10, 100, 1000}, RefSat: 100, SatEvents: 1000, SatWarmup: 500 * time.Millisecond, SatMeasure: 2 * time.Second,
		PacedLevels: []int{100, 1000, 2000}, RefPaced: 1000, PacedRate: 20, PacedRunSec: 5, PacedWarmup: 1500 * time.Millisecond, PacedMeasur: 4 * time.Second,
		IdleLevels: []int{100, 1000, 10000}, IdleLimit: 60 * time.Second, Capture: true, Second: FullSecond()}
}

// Phases a case takes part in.
const (
	phSat = 1 << iota
	phPaced
	phIdle
)

// ckMix is what the CopilotKit runtime's client can read of the 1.0
// workload.
var ckMix = synth.Mix{NoTools: true, NoSubagents: true, NoState: true}

type caseSpec struct {
	Case
	phases int
}

// levels are the stream counts of a phase (0 saturation, 1 paced, 2
// idle) for the case: all, but for a slow proxy's case (mostStreams)
// those up to its cap, or the cap alone when every level is over it.
func (sp caseSpec) levels(all []int, phase int) []int {
	most := mostStreams[sp.Name][phase]
	if most == 0 {
		return all
	}
	var out []int
	for _, n := range all {
		if n <= most {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []int{most}
	}
	return out
}

// ckMost are the CopilotKit runtime's levels: about 7,000 events/s at
// saturation and a core for 2,000 paced events/s on this machine, so that
// at 100 streams a run of 1,000 events outlasts the window, and at 1,000
// paced streams it falls behind for good.
var ckMost = [3]int{10, 100, 1000}

// mostStreams caps the levels of the cases named (saturation, paced,
// idle), the relay's beside CopilotKit's so that both are measured alike.
var mostStreams = map[string][3]int{"copilotkit": ckMost, "agui-relay (copilotkit's runs)": ckMost}

// Cases are the comparison's rows, in report order.
func specs() []caseSpec {
	all := phSat | phPaced | phIdle
	return []caseSpec{
		{Case{Name: "direct", Proxy: ProxyNone, Dialect: synth.Dialect10, Exact: true}, phSat | phPaced},
		{Case{Name: "agui-relay", Proxy: ProxyRelay, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		{Case{Name: "nginx", Proxy: ProxyNginx, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		{Case{Name: "haproxy", Proxy: ProxyHAProxy, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		{Case{Name: "caddy", Proxy: ProxyCaddy, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		// One P, as nginx has one worker: what the relay costs and how long
		// events wait in it without the runtime handing goroutines between
		// threads (bench/README "Latency").
		{Case{Name: "agui-relay 1 P", Proxy: ProxyRelay, Dialect: synth.Dialect10, Exact: true, Baseline: "direct", Env: []string{"GOMAXPROCS=1"}}, phSat | phPaced},
		// Go's floor: bytes copied between sockets with raw system calls,
		// nothing looked at; what the runtime's scheduler and poller cost
		// a proxy that does nothing else.
		{Case{Name: "tcpcopy", Proxy: ProxyTCPCopy, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, phSat | phPaced},
		// The floor of the relay's dependencies: fasthttp's server and
		// client streaming each answer through, nothing looked at.
		{Case{Name: "fasthttp", Proxy: ProxyFastHTTP, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, phSat | phPaced},
		{Case{Name: "httputil", Proxy: ProxyHTTPUtil, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		{Case{Name: "naive", Proxy: ProxyNaive, Dialect: synth.Dialect10, Exact: true, Baseline: "direct"}, all},
		// The CopilotKit runtime parses every event with the @ag-ui/client
		// it bundles (0.0.59), which rejects a 1.0 TOOL_CALL_RESULT's
		// content parts and SUBAGENT_*, and its in-memory runner replays
		// each run's STATE_DELTAs onto an empty state (not the input's),
		// where the producer's patches do not apply and the process dies:
		// its runs leave tool calls, subagents and state out, and so do
		// those of the relay it is compared with.
		{Case{Name: "copilotkit", Proxy: ProxyCopilotKit, Dialect: synth.Dialect10, Mix: ckMix, Exact: true, Baseline: "direct"}, all},
		{Case{Name: "agui-relay (copilotkit's runs)", Proxy: ProxyRelay, Dialect: synth.Dialect10, Mix: ckMix, Exact: true, Baseline: "direct"}, phSat | phPaced},
		{Case{Name: "agui-relay 1.0→0.0.45", Proxy: ProxyRelay, Dialect: synth.Dialect10, Args: []string{"--consumer-version", "0.0.45"}, Baseline: "direct"}, all},
		{Case{Name: "naive 1.0→0.0.45", Proxy: ProxyNaive, Dialect: synth.Dialect10, Args: []string{"--translate", "down"}, Baseline: "direct"}, phSat | phPaced},
		{Case{Name: "direct legacy", Proxy: ProxyNone, Dialect: synth.DialectLegacy, Exact: true}, phSat | phPaced},
		{Case{Name: "agui-relay legacy→1.0", Proxy: ProxyRelay, Dialect: synth.DialectLegacy, Baseline: "direct legacy"}, all},
		{Case{Name: "naive legacy→1.0", Proxy: ProxyNaive, Dialect: synth.DialectLegacy, Args: []string{"--translate", "up"}, Baseline: "direct legacy"}, phSat | phPaced},
		{Case{Name: "direct thinking", Proxy: ProxyNone, Dialect: synth.DialectThinking, Exact: true}, phSat},
		{Case{Name: "agui-relay thinking→1.0", Proxy: ProxyRelay, Dialect: synth.DialectThinking, Baseline: "direct thinking"}, phSat},
		{Case{Name: "naive thinking→1.0", Proxy: ProxyNaive, Dialect: synth.DialectThinking, Args: []string{"--translate", "up"}, Baseline: "direct thinking"}, phSat},
	}
}

// CaseResult is everything measured for one case.
type CaseResult struct {
	Case       Case            `json:"-"`
	Name       string          `json:"name"`
	Proxy      Proxy           `json:"proxy"`
	Dialect    string          `json:"dialect"`
	Args       []string        `json:"args,omitempty"`
	Skipped    string          `json:"skipped,omitempty"`
	Error      string          `json:"error,omitempty"`
	Sat        []PhaseResult   `json:"saturation"`
	Paced      []PhaseResult   `json:"paced"`
	Captures   []CaptureResult `json:"captures,omitempty"`
	Idle       []IdleResult    `json:"idle"`
	PeakRSSKiB int64           `json:"peak_rss_kib"`
	Threads    int64           `json:"threads"`
	Procs      int             `json:"processes"`
}

// Report is the whole run.
type Report struct {
	Mode    string       `json:"mode"`
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
	Machine Machine      `json:"machine"`
	Config  ConfigInfo   `json:"config"`
	Cases   []CaseResult `json:"cases"`
	// Workloads are those the run took; Second and SecondConfig the
	// results and size of those beside the bench's own.
	Workloads    []string       `json:"workloads,omitempty"`
	Second       []SecondResult `json:"second,omitempty"`
	SecondConfig *SecondConfig  `json:"second_config,omitempty"`
	Command      string         `json:"command"`
	Versions     Versions       `json:"versions"`
}

// ConfigInfo is the part of Config worth recording.
type ConfigInfo struct {
	SatLevels   []int   `json:"saturation_streams"`
	RefSat      int     `json:"reference_saturation_streams"`
	SatEvents   int     `json:"saturation_events_per_run"`
	SatMeasure  float64 `json:"saturation_measure_s"`
	PacedLevels []int   `json:"paced_streams"`
	RefPaced    int     `json:"reference_paced_streams"`
	PacedRate   float64 `json:"paced_rate_per_stream"`
	PacedEvents int     `json:"paced_events_per_run"`
	PacedMeasur float64 `json:"paced_measure_s"`
	IdleLevels  []int   `json:"idle_streams"`
	IdleNote    string  `json:"idle_note,omitempty"`
	Pinned      string  `json:"pinned,omitempty"`
	CaptureNote string  `json:"capture_note,omitempty"`
	FlushBytes  int     `json:"producer_flush_bytes"`
}

// Machine describes where the figures were taken.
type Machine struct {
	CPU      string  `json:"cpu"`
	Cores    int     `json:"cores"`
	MemGiB   float64 `json:"mem_gib"`
	Kernel   string  `json:"kernel"`
	Go       string  `json:"go"`
	LoadAvg0 float64 `json:"loadavg_at_start"`
}

// Versions records what was compared.
type Versions struct {
	Relay      string `json:"agui_relay"`
	Nginx      string `json:"nginx"`
	HAProxy    string `json:"haproxy,omitempty"`
	Caddy      string `json:"caddy,omitempty"`
	CopilotKit string `json:"copilotkit_runtime,omitempty"`
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Run builds the proxies, runs every case and returns the report.
func Run(cfg Config) (*Report, error) {
	start := time.Now()
	rep := &Report{Mode: cfg.Mode, Started: start, Machine: machine()}
	rep.Config = ConfigInfo{SatLevels: cfg.SatLevels, RefSat: cfg.RefSat, SatEvents: cfg.SatEvents, SatMeasure: cfg.SatMeasure.Seconds(),
		PacedLevels: cfg.PacedLevels, RefPaced: cfg.RefPaced, PacedRate: cfg.PacedRate, PacedEvents: pacedEvents(cfg),
		PacedMeasur: cfg.PacedMeasur.Seconds(), IdleLevels: cfg.IdleLevels}
	if err := RaiseFileLimit(); err != nil {
		cfg.logf("warning: %v", err)
	}
	// Each idle stream holds two sockets in the proxy (and two in this
	// process): cap the levels to what the open-file limit allows.
	limit := FileLimit()
	// nginx needs headroom beyond two connections per stream (it starts
	// "reusing connections" at about 94% of worker_connections).
	if most := int(limit*9/10/2) / 100 * 100; most > 0 {
		for i, n := range cfg.IdleLevels {
			if n > most {
				rep.Config.IdleNote = fmt.Sprintf("%d idle streams need %d open files in the proxy; RLIMIT_NOFILE is %d here (raising it needs CAP_SYS_RESOURCE), so that level ran with %d streams", n, 2*n+100, limit, most)
				cfg.logf("note: %s", rep.Config.IdleNote)
				cfg.IdleLevels[i] = most
			}
		}
		rep.Config.IdleLevels = cfg.IdleLevels
	}
	work, err := os.MkdirTemp("", "aguibench-")
	if err != nil {
		return nil, err
	}
	if os.Getenv("AGUIBENCH_KEEP") == "" {
		defer os.RemoveAll(work)
	}
	if cfg.Capture {
		if cfg.tcpdump, err = findTcpdump(cfg); err != nil {
			rep.Config.CaptureNote = "time in the proxy not measured: " + err.Error()
			cfg.logf("note: %s", rep.Config.CaptureNote)
		}
	}
	bin, buildErrs := build(cfg, work)
	rep.Versions = Versions{Relay: relayVersion(cfg.Repo), Nginx: nginxVersion(bin.Nginx),
		HAProxy: proxyVersion(bin.HAProxy, "-v"), Caddy: proxyVersion(bin.Caddy, "version"), CopilotKit: copilotKitVersion(bin.CopilotKit)}

	prod, err := synth.StartProducer("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	if cfg.FlushBytes > 0 {
		prod.FlushBytes = cfg.FlushBytes
	}
	rep.Config.FlushBytes = prod.FlushBytes
	if cfg.Pin {
		if err := pinSelf(); err != nil {
			return nil, err
		}
		bin.Pin = fmt.Sprint(runtime.NumCPU() - 1)
		rep.Config.Pinned = "proxy on CPU " + bin.Pin + ", producer and load generator on the others"
	}
	cfg.logf("producer on %s; GOMAXPROCS %d; load %.2f", prod.Addr(), runtime.GOMAXPROCS(0), LoadAvg())

	if len(cfg.Workloads) == 0 {
		cfg.Workloads = []string{WorkloadBench}
	}
	rep.Workloads = cfg.Workloads
	for _, sp := range specs() {
		if !selected(cfg.Only, sp.Name) || !slices.Contains(cfg.Workloads, WorkloadBench) {
			continue
		}
		cr := CaseResult{Case: sp.Case, Name: sp.Name, Proxy: sp.Proxy, Dialect: sp.Dialect.String(), Args: sp.Args}
		if e, ok := buildErrs[sp.Proxy]; ok {
			cr.Skipped = e
			cfg.logf("%s: skipped: %s", sp.Name, e)
			rep.Cases = append(rep.Cases, cr)
			continue
		}
		runCase(cfg, sp, bin, prod, work, &cr)
		rep.Cases = append(rep.Cases, cr)
	}
	if slices.ContainsFunc(cfg.Workloads, func(w string) bool { return w != WorkloadBench }) {
		sc := cfg.Second
		rep.SecondConfig = &sc
		if rep.Second, err = runSecond(cfg, bin, buildErrs, work); err != nil {
			return nil, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func selected(only []string, name string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == name || (strings.HasSuffix(o, "*") && strings.HasPrefix(name, strings.TrimSuffix(o, "*"))) {
			return true
		}
	}
	return false
}

func pacedEvents(cfg Config) int {
	n := int(cfg.PacedRate*cfg.PacedRunSec + 0.5)
	if n < 10 {
		n = 10
	}
	return n
}

func runCase(cfg Config, sp caseSpec, bin Binaries, prod *synth.Producer, work string, cr *CaseResult) {
	cfg.logf("== %s", sp.Name)
	if sp.phases&(phSat|phPaced) != 0 {
		proc, err := StartProxy(sp.Case, bin, prod.Addr(), work)
		if err != nil {
			cr.Error = err.Error()
			cfg.logf("   error: %v", err)
			return
		}
		if err := probe(proc, sp.Case); err != nil {
			cr.Error = "probe run: " + err.Error()
			cfg.logf("   error: %s; proxy log: %s", cr.Error, proc.Log())
			proc.Stop()
			return
		}
		if sp.phases&phSat != 0 {
			plan := prod.Plan(sp.Dialect, cfg.SatEvents, sp.Mix)
			for _, n := range sp.levels(cfg.SatLevels, 0) {
				r := RunLoad(proc.Addr, proc, plan, Load{Streams: n, Params: synth.RunParams{Dialect: sp.Dialect, Events: cfg.SatEvents, Mix: sp.Mix},
					Warmup: cfg.SatWarmup, Measure: cfg.SatMeasure, Exact: sp.Exact})
				cfg.logf("   saturation %5d streams: %9.0f ev/s %7.1f MB/s  cpu %6.3f s/Mev  runs ok %d bad %d failed %d %s",
					n, r.EventsPerSec, r.BytesPerSec/1e6, r.CPUPerMEvents, r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError)
				cr.Sat = append(cr.Sat, r)
			}
		}
		if sp.phases&phPaced != 0 {
			ev := pacedEvents(cfg)
			plan := prod.Plan(sp.Dialect, ev, sp.Mix)
			for _, n := range sp.levels(cfg.PacedLevels, 1) {
				r := RunLoad(proc.Addr, proc, plan, Load{Streams: n, Params: synth.RunParams{Dialect: sp.Dialect, Events: ev, Rate: cfg.PacedRate, Mix: sp.Mix},
					Warmup: cfg.PacedWarmup, Measure: cfg.PacedMeasur, Exact: sp.Exact})
				cfg.logf("   paced %5d×%g ev/s: %8.0f ev/s  p50 %7.0f µs p99 %7.0f µs p999 %7.0f µs  cpu %6.3f s/Mev  runs ok %d bad %d failed %d %s",
					n, cfg.PacedRate, r.EventsPerSec, r.P50, r.P99, r.P999, r.CPUPerMEvents, r.RunsOK, r.RunsBad, r.RunsFailed, r.FirstError)
				cr.Paced = append(cr.Paced, r)
			}
		}
		s := proc.Sample()
		cr.PeakRSSKiB, cr.Threads, cr.Procs = s.HWMKiB, s.Threads, s.Procs
		if cfg.tcpdump != "" && sp.phases&phPaced != 0 && sp.Proxy != ProxyNone {
			for _, n := range sp.levels(cfg.PacedLevels, 1) {
				if n <= cfg.RefPaced {
					cr.Captures = append(cr.Captures, captureCase(cfg, sp, proc, prod, work, n))
				}
			}
		}
		if cfg.Profile && proc.Pid != 0 {
			profileCase(cfg, sp, proc, prod)
		}
		if log := proc.Log(); log != "" && cfg.Log != nil {
			cfg.logf("   proxy log tail: %.400s", log)
		}
		proc.Stop()
	}
	if sp.phases&phIdle != 0 && sp.Proxy != ProxyNone {
		for _, n := range sp.levels(cfg.IdleLevels, 2) {
			proc, err := StartProxy(sp.Case, bin, prod.Addr(), work)
			if err != nil {
				cr.Idle = append(cr.Idle, IdleResult{Streams: n, FirstError: err.Error()})
				continue
			}
			var hook func()
			if cfg.Profile && proc.Admin != "" {
				hook = func() { heapProfile(cfg, sp.Name, n, proc.Admin) }
			}
			r := IdleMemoryHook(proc, prod, sp.Dialect, n, cfg.IdleLimit, hook)
			cfg.logf("   idle %5d streams: opened %d finished %d in %.1fs, rss %d → %d KiB: %.1f KiB/stream %s",
				n, r.Opened, r.Finished, r.OpenSeconds, r.BaseRSSKiB, r.LoadedRSSKiB, r.KiBPerStream, r.FirstError)
			cr.Idle = append(cr.Idle, r)
			proc.Stop()
		}
	}
}

// profileCase records where the proxy spends its CPU at the reference
// saturation and paced loads, with perf, into OutDir/profiles.
func profileCase(cfg Config, sp caseSpec, proc *Proc, prod *synth.Producer) {
	dir := filepath.Join(cfg.OutDir, "profiles")
	os.MkdirAll(dir, 0o755)
	slug := caseSlug(sp.Name)
	run := func(label string, load Load, plan synth.Plan) {
		base := filepath.Join(dir, slug+"-"+label)
		secs := (load.Warmup + load.Measure).Seconds()
		w, err := startPerf(base, proc.Pid, secs)
		if err != nil {
			cfg.logf("   profile: %v", err)
			return
		}
		// The allocations of the window: go tool pprof -sample_index
		// alloc_space -base <base>-allocs-before.pb.gz <base>-allocs.pb.gz.
		allocs := proc.Admin != "" && savePprof(cfg, proc.Admin, "/debug/pprof/allocs", base+"-allocs-before.pb.gz")
		r := RunLoad(proc.Addr, proc, plan, load)
		if allocs {
			savePprof(cfg, proc.Admin, "/debug/pprof/allocs", base+"-allocs.pb.gz")
		}
		stat, err := w.finish()
		if err != nil {
			cfg.logf("   profile: %v", err)
			return
		}
		// Per 1,000 events over the whole window (warm-up included, so the
		// ratio is approximate).
		counts := ""
		if total := r.EventsPerSec * secs; total > 0 {
			for _, c := range stat {
				counts += fmt.Sprintf("# %s: %.0f (%.1f per 1,000 events)\n", c.Event, c.Value, c.Value/total*1000)
			}
		}
		b, err := w.report(0.5)
		if err != nil {
			cfg.logf("   profile: %v", err)
			return
		}
		head := fmt.Sprintf("# %s, %s: %d streams, %.0f events/s delivered under perf\n%s", sp.Name, label, load.Streams, r.EventsPerSec, counts)
		cfg.logf("   profile %s: %s", label, strings.ReplaceAll(strings.TrimSpace(counts), "\n", ";"))
		os.WriteFile(base+".txt", append([]byte(head), b...), 0o644)
		w.discard()
		cfg.logf("   profile: %s.txt", base)
	}
	if sp.phases&phSat != 0 {
		run("saturation", Load{Streams: cfg.RefSat, Params: synth.RunParams{Dialect: sp.Dialect, Events: cfg.SatEvents, Mix: sp.Mix},
			Warmup: cfg.SatWarmup, Measure: cfg.SatMeasure, Exact: sp.Exact}, prod.Plan(sp.Dialect, cfg.SatEvents, sp.Mix))
	}
	if sp.phases&phPaced != 0 {
		ev := pacedEvents(cfg)
		run("paced", Load{Streams: cfg.RefPaced, Params: synth.RunParams{Dialect: sp.Dialect, Events: ev, Rate: cfg.PacedRate, Mix: sp.Mix},
			Warmup: cfg.PacedWarmup, Measure: cfg.PacedMeasur, Exact: sp.Exact}, prod.Plan(sp.Dialect, ev, sp.Mix))
	}
}

// heapProfile saves the proxy's heap and goroutine profiles, when its admin
// port serves net/http/pprof, while idle streams are open.
func heapProfile(cfg Config, name string, n int, admin string) {
	dir := filepath.Join(cfg.OutDir, "profiles")
	os.MkdirAll(dir, 0o755)
	slug := caseSlug(name)
	for _, p := range []struct{ path, ext string }{{"/debug/pprof/heap?gc=1", "heap.pb.gz"}, {"/debug/pprof/heap?debug=1", "memstats.txt"}, {"/debug/pprof/goroutine?debug=1", "goroutines.txt"}} {
		if !savePprof(cfg, admin, p.path, filepath.Join(dir, fmt.Sprintf("%s-idle-%d.%s", slug, n, p.ext))) {
			return
		}
	}
}

// savePprof saves what the proxy's admin port answers at path into file,
// and reports whether it could.
func savePprof(cfg Config, admin, path, file string) bool {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + admin + path)
	if err != nil {
		cfg.logf("   profile: %v", err)
		return false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		cfg.logf("   profile: %s: HTTP %d", path, resp.StatusCode)
		return false
	}
	os.WriteFile(file, b, 0o644)
	cfg.logf("   profile: %s", file)
	return true
}

// probe runs one short run through the proxy and checks it.
func probe(proc *Proc, c Case) error {
	plan := synth.NewMixedPlan(c.Dialect, 300, c.Mix)
	chk := synth.NewRunCheck(plan, c.Exact)
	err := runOnce(proc, synth.RunParams{Dialect: c.Dialect, Events: 300, Mix: c.Mix}, "probe", load.Timeouts{Connect: 10 * time.Second, Idle: 10 * time.Second},
		func(d []byte) { chk.Event(d) })
	if err != nil {
		return err
	}
	return chk.Err()
}

// RaiseFileLimit lifts RLIMIT_NOFILE so that 10,000 streams (two sockets
// each in the bench, two in the proxy) fit; children inherit it.
func RaiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	want := uint64(200000)
	if lim.Cur >= want {
		return nil
	}
	n := lim
	n.Cur, n.Max = want, max(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err != nil {
		n.Cur, n.Max = lim.Max, lim.Max
		if err2 := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err2 != nil {
			return fmt.Errorf("raising the open-file limit: %v", err)
		}
		return fmt.Errorf("open-file limit only %d (raising it to %d: %v); 10,000 idle streams need about 40,000", lim.Max, want, err)
	}
	return nil
}

// pinSelf moves every thread of this process off the last CPU.
func pinSelf() error {
	n := runtime.NumCPU()
	if n < 2 {
		return fmt.Errorf("--pin needs at least 2 CPUs")
	}
	cpus := "0"
	if n > 2 {
		cpus = fmt.Sprintf("0-%d", n-2)
	}
	if b, err := exec.Command("taskset", "-a", "-p", "-c", cpus, fmt.Sprint(os.Getpid())).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset: %v: %s", err, b)
	}
	// As many Ps as CPUs left, or they time-slice one CPU.
	runtime.GOMAXPROCS(n - 1)
	return nil
}

// FileLimit is the current RLIMIT_NOFILE soft limit.
func FileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return lim.Cur
}

// build compiles agui-relay and the Go baselines, and finds nginx. A
// proxy that cannot be had is reported per proxy, so its cases are skipped.
func build(cfg Config, work string) (Binaries, map[Proxy]string) {
	errs := map[Proxy]string{}
	var bin Binaries
	gobuild := func(out, pkg string) error {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = cfg.Repo
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %v: %s", pkg, err, strings.TrimSpace(string(b)))
		}
		return nil
	}
	bin.Relay = filepath.Join(work, "agui-relay")
	if err := gobuild(bin.Relay, "."); err != nil {
		errs[ProxyRelay] = err.Error()
	} else if err := relayServes(bin.Relay); err != nil {
		errs[ProxyRelay] = err.Error()
	}
	help := relayHelp(bin.Relay)
	if cfg.Profile && strings.Contains(help, "-pprof") {
		// Heap and goroutine profiles with idle streams open.
		bin.RelayArgs = append(bin.RelayArgs, "--pprof")
	}
	if strings.Contains(help, "upstream-max-conns") {
		// The default cap (runs in flight) is below the idle levels.
		bin.RelayArgs = append(bin.RelayArgs, "--upstream-max-conns", "30000")
	}
	bin.HTTPUtil = filepath.Join(work, "httputilproxy")
	if err := gobuild(bin.HTTPUtil, "./bench/cmd/httputilproxy"); err != nil {
		errs[ProxyHTTPUtil] = err.Error()
	}
	bin.TCPCopy = filepath.Join(work, "tcpcopy")
	if err := gobuild(bin.TCPCopy, "./bench/cmd/tcpcopy"); err != nil {
		errs[ProxyTCPCopy] = err.Error()
	}
	bin.FastHTTP = filepath.Join(work, "fasthttpproxy")
	if err := gobuild(bin.FastHTTP, "./bench/cmd/fasthttpproxy"); err != nil {
		errs[ProxyFastHTTP] = err.Error()
	}
	bin.Naive = filepath.Join(work, "naiverelay")
	if err := gobuild(bin.Naive, "./bench/cmd/naiverelay"); err != nil {
		errs[ProxyNaive] = err.Error()
	}
	var err error
	bin.Nginx, err = findNginx(cfg)
	if err != nil {
		errs[ProxyNginx] = err.Error()
	}
	if bin.HAProxy, err = findPackaged(cfg, "haproxy", "/usr/sbin/haproxy"); err != nil {
		errs[ProxyHAProxy] = err.Error()
	}
	if bin.Caddy, err = findPackaged(cfg, "caddy", "/usr/bin/caddy"); err != nil {
		errs[ProxyCaddy] = err.Error()
	}
	if bin.Node, bin.CopilotKit, err = findCopilotKit(cfg); err != nil {
		errs[ProxyCopilotKit] = err.Error()
	}
	cfg.logf("built agui-relay, tcpcopy, fasthttpproxy, httputilproxy, naiverelay in %s; nginx: %s, haproxy: %s, caddy: %s, copilotkit: %s",
		work, bin.Nginx, bin.HAProxy, bin.Caddy, bin.CopilotKit)
	return bin, errs
}

// relayServes checks that this build of agui-relay implements serve.
func relayServes(path string) error {
	if strings.Contains(relayHelp(path), "not implemented") {
		return fmt.Errorf("agui-relay serve is not implemented in this build")
	}
	return nil
}

func relayHelp(path string) string {
	b, _ := exec.Command(path, "serve", "--help").CombinedOutput()
	return string(b)
}

// findNginx returns nginx's path, installing Debian's nginx-light first
// when setup allows it (the package's own service may start; the bench
// runs its own).
func findNginx(cfg Config) (string, error) {
	return findPackaged(cfg, "nginx-light", "/usr/sbin/nginx")
}

// findPackaged looks for the program installed at path, on the PATH and
// there, and installs Debian's package pkg when it is missing and setup
// allows it.
func findPackaged(cfg Config, pkg, path string, elsewhere ...string) (string, error) {
	for _, p := range append([]string{filepath.Base(path), path}, elsewhere...) {
		if found, err := exec.LookPath(p); err == nil {
			return found, nil
		}
	}
	if !cfg.Setup {
		return "", fmt.Errorf("%s not installed (run with --setup to install Debian's %s)", filepath.Base(path), pkg)
	}
	cfg.logf("installing %s from Debian's packages", pkg)
	cmd := exec.Command("sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing %s: %v: %.500s", pkg, err, b)
	}
	return exec.LookPath(path)
}

// findCopilotKit returns node and the CopilotKit runtime's script, with
// the runtime's Node packages installed from bench/copilotkit's lock file
// (scripts/npm-ci.sh) when setup allows it.
func findCopilotKit(cfg Config) (node, script string, err error) {
	dir := filepath.Join(cfg.Repo, "bench", "copilotkit")
	script = filepath.Join(dir, "runtime.js")
	installed := func() bool {
		_, err := os.Stat(filepath.Join(dir, "node_modules", "@copilotkit", "runtime", "package.json"))
		return err == nil
	}
	if cfg.Setup {
		cmd := exec.Command(filepath.Join(cfg.Repo, "scripts", "npm-ci.sh"), dir, "@copilotkit/runtime")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("installing bench/copilotkit's Node packages: %v: %.500s", err, b)
		}
	}
	if node, err = exec.LookPath("node"); err != nil {
		return "", "", fmt.Errorf("node not found (run with --setup to install it and bench/copilotkit's packages)")
	}
	if !installed() {
		return "", "", fmt.Errorf("bench/copilotkit's Node packages are not installed (run with --setup, or scripts/npm-ci.sh bench/copilotkit @copilotkit/runtime)")
	}
	return node, script, nil
}

// proxyVersion is what a packaged proxy says of its version.
func proxyVersion(path string, args ...string) string {
	if path == "" {
		return ""
	}
	b, _ := exec.Command(path, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(line)
}

// copilotKitVersion is the installed @copilotkit/runtime's version.
func copilotKitVersion(script string) string {
	if script == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(script), "node_modules", "@copilotkit", "runtime", "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct{ Version string }
	json.Unmarshal(b, &pkg)
	return pkg.Version
}

func nginxVersion(path string) string {
	if path == "" {
		return ""
	}
	b, _ := exec.Command(path, "-v").CombinedOutput()
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "nginx version: "))
}

func relayVersion(repo string) string {
	b, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%h %s").Output()
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(b))
	if d, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no", "--", "*.go", ":!bench").Output(); err == nil && len(bytes.TrimSpace(d)) > 0 {
		v += " + uncommitted changes to " + strings.Join(strings.Fields(strings.ReplaceAll(string(d), " M ", " ")), ", ")
	}
	return v
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadAvg0: LoadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%g", &kb)
		m.MemGiB = kb / (1 << 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
