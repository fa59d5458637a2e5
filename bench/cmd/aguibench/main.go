// Command aguibench measures agui-relay against the proxies a user would
// pick instead (none, nginx, httputil.ReverseProxy, a decode-everything
// relay), side by side in one run, and writes a markdown report with ratios
// and SVG plots.
//
//	go run ./bench/cmd/aguibench --quick          # CI: completeness only, < 1 min
//	go run ./bench/cmd/aguibench --full --setup   # the figures (a few minutes)
//
// It exits 1 when any stream arrived incomplete, never because of speed.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/bench/harness"
)

func main() {
	quick := flag.Bool("quick", false, "short run that checks completeness through every case (for CI)")
	full := flag.Bool("full", false, "the real figures (a few minutes); the default")
	out := flag.String("out", "", "output directory (default bench/out/<mode>-<timestamp>)")
	only := flag.String("only", "", "comma-separated case names to run (a trailing * matches a prefix), e.g. 'direct,agui-relay*,nginx'")
	capture := flag.Bool("capture", true, "in full mode, run each proxy's paced loads up to the reference once more under tcpdump, for the time events spend in the proxy")
	setup := flag.Bool("setup", false, "install nginx and tcpdump from Debian's packages when they are missing")
	flush := flag.Int("flush-bytes", 0, "producer write size when streaming as fast as possible (default 16384; 1 = one write per event)")
	satN := flag.String("sat-streams", "", "override the saturation stream counts, e.g. 100 or 10,100")
	pacedN := flag.String("paced-streams", "", "override the paced stream counts")
	idleN := flag.String("idle-streams", "", "override the idle stream counts")
	satEvents := flag.Int("sat-events", 0, "events per run at saturation (default 1000; a few events per run measure what starting a run costs)")
	replot := flag.String("replot", "", "rewrite report.md and the plots of an earlier run's directory from its results.json, then exit")
	pin := flag.Bool("pin", false, "run the proxy on the last CPU and the producer and load generator on the others")
	profile := flag.Bool("profile", false, "after the measured windows, profile each proxy with perf (into <out>/profiles)")
	workloads := flag.String("workloads", "bench", "comma-separated workloads: bench (the bench's own phases per case), long (concurrent runs of one long message), runs (the cost of a run), first (time to first event at rates of new runs), or all")
	rounds := flag.Int("rounds", 0, "alternating rounds of the long, runs and first workloads (default 3; --quick 1)")
	longStreams := flag.Int("long-streams", 0, "concurrent runs of the long workload (default 40)")
	longEvents := flag.Int("long-events", 0, "content deltas per run of the long workload (default 40000)")
	runWorkers := flag.Int("run-workers", 0, "workers of the runs workload (default 40)")
	runsPer := flag.Int("runs-per-worker", 0, "runs each worker of the runs workload makes (default 1500)")
	runEvents := flag.Int("run-events", 0, "content deltas per run of the runs and first workloads (default 5)")
	firstRates := flag.String("first-rates", "", "new runs per second of the first workload, e.g. 100,1000 (the default)")
	firstSecs := flag.Float64("first-seconds", 0, "measured seconds per rate of the first workload (default 10)")
	flag.Parse()
	if *replot != "" {
		rep, err := harness.LoadReport(*replot)
		if err == nil {
			err = rep.Write(*replot, rep.Command)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "aguibench:", err)
			os.Exit(1)
		}
		return
	}
	if *quick && *full {
		fmt.Fprintln(os.Stderr, "aguibench: --quick and --full exclude each other")
		os.Exit(2)
	}
	cfg := harness.FullConfig()
	if *quick {
		cfg = harness.QuickConfig()
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	for _, o := range []struct {
		flag string
		dst  *[]int
		ref  *int
	}{{*satN, &cfg.SatLevels, &cfg.RefSat}, {*pacedN, &cfg.PacedLevels, &cfg.RefPaced}, {*idleN, &cfg.IdleLevels, nil}} {
		if o.flag == "" {
			continue
		}
		var ns []int
		for _, f := range strings.Split(o.flag, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "aguibench: bad stream count %q\n", f)
				os.Exit(2)
			}
			ns = append(ns, n)
		}
		*o.dst = ns
		if o.ref != nil && !slices.Contains(ns, *o.ref) {
			*o.ref = ns[len(ns)-1]
		}
	}
	if err := secondFlags(&cfg, *workloads, *firstRates, *firstSecs, []struct {
		v   int
		dst *int
	}{{*rounds, &cfg.Second.Rounds}, {*longStreams, &cfg.Second.LongStreams}, {*longEvents, &cfg.Second.LongEvents},
		{*runWorkers, &cfg.Second.RunWorkers}, {*runsPer, &cfg.Second.RunsPerWorker}, {*runEvents, &cfg.Second.RunEvents}}); err != nil {
		fmt.Fprintln(os.Stderr, "aguibench:", err)
		os.Exit(2)
	}
	cfg.Setup = *setup
	cfg.Profile = *profile
	cfg.Capture = cfg.Capture && *capture
	cfg.Pin = *pin
	cfg.FlushBytes = *flush
	if *satEvents < 0 {
		fmt.Fprintln(os.Stderr, "aguibench: --sat-events must be positive")
		os.Exit(2)
	}
	if *satEvents > 0 {
		cfg.SatEvents = *satEvents
	}
	cfg.Log = os.Stderr
	repo, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "aguibench:", err)
		os.Exit(2)
	}
	cfg.Repo = repo
	dir := *out
	if dir == "" {
		dir = filepath.Join(repo, "bench", "out", cfg.Mode+"-"+time.Now().Format("20060102-150405"))
	}
	cfg.OutDir = dir
	command := "go run ./bench/cmd/aguibench " + strings.Join(os.Args[1:], " ")
	rep, err := harness.Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aguibench:", err)
		os.Exit(1)
	}
	if err := rep.Write(dir, strings.TrimSpace(command)); err != nil {
		fmt.Fprintln(os.Stderr, "aguibench:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "report: %s\n", filepath.Join(dir, "report.md"))
	if ps := rep.Problems(); len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintln(os.Stderr, "INCOMPLETE:", p)
		}
		os.Exit(1)
	}
}

// secondFlags applies the workload flags to cfg: the workloads by name
// (all: every one) and the sizes of those beside the bench's own, where
// given (counts of 0 keep the mode's default).
func secondFlags(cfg *harness.Config, workloads, rates string, secs float64, counts []struct {
	v   int
	dst *int
}) error {
	cfg.Workloads = nil
	for _, w := range strings.Split(workloads, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "all":
			cfg.Workloads = harness.Workloads()
		case slices.Contains(harness.Workloads(), w):
			if !slices.Contains(cfg.Workloads, w) {
				cfg.Workloads = append(cfg.Workloads, w)
			}
		default:
			return fmt.Errorf("unknown workload %q (want %s or all)", w, strings.Join(harness.Workloads(), ", "))
		}
	}
	for _, c := range counts {
		if c.v < 0 {
			return fmt.Errorf("a workload's count must be positive, not %d", c.v)
		}
		if c.v > 0 {
			*c.dst = c.v
		}
	}
	if secs < 0 {
		return fmt.Errorf("--first-seconds must be positive")
	}
	if secs > 0 {
		cfg.Second.FirstSeconds = secs
	}
	if rates != "" {
		cfg.Second.FirstRates = nil
		for _, f := range strings.Split(rates, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || v <= 0 {
				return fmt.Errorf("bad rate %q", f)
			}
			cfg.Second.FirstRates = append(cfg.Second.FirstRates, v)
		}
	}
	return nil
}

// repoRoot is the module root, where agui-relay is built from.
func repoRoot() (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}
