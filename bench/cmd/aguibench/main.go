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

// repoRoot is the module root, where agui-relay is built from.
func repoRoot() (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}
