package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/agui-relay/agui-relay/internal/load"
)

// loadOptions are the load command's flags.
type loadOptions struct {
	levels     []int
	runs       int64
	duration   time.Duration
	ramp       time.Duration
	rate       float64
	inputs     []string
	headers    []load.Header
	timeouts   load.Timeouts
	drain      time.Duration
	judge      int
	out        string
	compare    string
	rounds     int
	interval   time.Duration
	progress   string
	insecure   bool
	names      []string
	thresholds []threshold
}

const loadUsage = `usage: agui-relay load [flags] URL
       agui-relay load report [--out DIR] DIR...   (adds up several loads' --out)

Runs AG-UI runs against URL (a POST of a RunAgentInput answered by an event
stream), -c at a time, and reports what a user waits for: the time to the
response headers, to the first event and to the first content event, the
gaps between events and the whole run, each as min, mean,
p50/p90/p95/p99/p99.9 and max, with a histogram; the throughput (runs/s,
events/s, bytes/s); errors by kind (refused, HTTP status, timeout,
RUN_ERROR by code, a stream cut before its terminal event, events out of
the order a consumer accepts, events the 1.0 rules find malformed) and how
many runs were complete (ended with RUN_FINISHED or RUN_ERROR and no other
error).

Each run posts the next --input file in turn (or a small default input),
with a fresh threadId and runId. With neither -n nor -d it runs for 10s.
While it runs it shows a progress line on a terminal and a plain line per
--interval otherwise; Ctrl-C stops it and prints the report of what ran.
A run still in flight when the load ends (--drain after -d, or Ctrl-C) is
a failed run of its own kind, unfinished, with how long it had been silent.

Exit status: k6's rule, with --threshold the thresholds alone decide: 0
when every one held, 99 when one was crossed; without, 0 when every run was
complete, 1 when any failed. 1 also when the load could not start, 2 on
usage errors, 130 on SIGINT (Ctrl-C), 143 on SIGTERM. The last line printed
says why.

examples:
  # the demo agent's synthetic scenario through the relay (go run . first)
  agui-relay load -c 100 -d 10s 'http://127.0.0.1:8080/agent?scenario=synthetic&events=1000'
  # an agent of your own, with auth, your inputs in turn, 5 new runs a second
  agui-relay load -c 50 -n 500 --rate 5 --header "Authorization: Bearer $TOKEN" \
      --input chat1.json --input chat2.json https://agent.example.com/api/agent
  # what the relay in front of an agent costs, in alternating rounds
  agui-relay load -c 10,100,500 -d 20s --out report/ --name agent --name relay \
      http://127.0.0.1:8000/agent --compare http://127.0.0.1:8080/agent
  # a CI gate: exit 99 when the p99 time to first event or the share of
  # failed runs crosses its threshold (failed runs alone do not)
  agui-relay load -c 20 -n 200 --threshold 'first_event.p99<500ms' --threshold 'errors<1%' URL
  # the loads of several machines, each written with --out, added up
  agui-relay load report --out all/ pod-0/ pod-1/ pod-2/

flags:
`

func runLoad(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "report" { // a URL is never "report"
		return loadReportCommand(args[1:], stdout, stderr)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// The first SIGINT or SIGTERM ends the load and prints the report, the
	// exit status naming the signal; a second one kills the process as
	// usual.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			cancel(signalCause{sig})
		case <-ctx.Done():
		}
	}()
	return loadCommand(ctx, args, stdout, stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

func loadCommand(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	fs := newFlagSet("load", &cmdOutput{stdout, stderr})
	o := loadOptions{levels: []int{10}, timeouts: load.DefaultTimeouts}
	fs.Func("c", "concurrent runs, or a comma-separated list of levels run one after the other (10,100,500) (default 10)", func(s string) error {
		o.levels = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a positive whole number", f)
			}
			o.levels = append(o.levels, n)
		}
		return nil
	})
	fs.Int64Var(&o.runs, "n", 0, "runs per level (with --compare: per target); 0: by -d; with -d too, whichever comes first ends the level, as k6's iterations and duration")
	durationVar(fs, &o.duration, "d", 0, "`duration` per level (with --compare: per target), with its unit (5s); no run starts after it (default 10s when -n is not given)")
	durationVar(fs, &o.ramp, "ramp", 0, "spread the start of the concurrent runs over this `duration`")
	fs.Func("rate", "at most this many new runs per second, a `number`, or runs/period as vegeta takes it (20, 20/s, 20/1s, 1200/1m; 0: the next run as soon as one ends)", func(s string) (err error) {
		o.rate, err = parseRate(s)
		return err
	})
	fs.Func("input", "a RunAgentInput file; repeat for several, taken in turn (default: one user message, protocolVersion 1.0)", func(s string) error {
		o.inputs = append(o.inputs, s)
		return nil
	})
	fs.Func("header", "a request header 'Name: value'; repeat for several", headerFlag(&o.headers))
	fs.Func("H", "a request `header` 'Name: value', as curl and hey take it: short for --header", headerFlag(&o.headers))
	durationVar(fs, &o.timeouts.Connect, "connect-timeout", o.timeouts.Connect, "time to connect, a `duration` (0: none)")
	durationVar(fs, &o.timeouts.Headers, "headers-timeout", o.timeouts.Headers, "time from the request to the response's headers, a `duration` (0: none)")
	durationVar(fs, &o.timeouts.Idle, "idle-timeout", o.timeouts.Idle, "longest silence inside a stream, a `duration` (0: none)")
	durationVar(fs, &o.timeouts.Run, "run-timeout", o.timeouts.Run, "longest run, a `duration` (0: none)")
	durationVar(fs, &o.drain, "drain", 10*time.Second, "with -d, how long runs in flight at its end may take to finish, a `duration`; then they are cut and fail (unfinished)")
	o.judge = load.JudgeAuto
	fs.Func("judge-every", "judge the body of one event in N against the 1.0 rules (1: every event, 0: none); auto: every event up to 20k a second across the load, a sample above (a judged body costs about 0.5 µs of CPU), and every run's order up to 200k events a second, a sample of runs above (the others' last event must be terminal); every run's terminal event is checked in any case, and with N every run's order (default auto)", func(s string) error {
		if s == "auto" {
			o.judge = load.JudgeAuto
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is neither auto nor a whole number of at least 0", s)
		}
		o.judge = n
		return nil
	})
	fs.BoolVar(&o.insecure, "insecure", false, "with https, do not verify the server's certificate")
	fs.StringVar(&o.out, "out", "", "write report.md, results.json, runs.jsonl (one line per run: its timings, status, error, events) and SVG plots into this directory")
	fs.StringVar(&o.compare, "compare", "", "a second URL, loaded in alternating rounds with URL; the report gives the ratios")
	fs.Func("name", "a name for a target in reports, in the order the command line gives the URL and --compare's (default A, B); repeat for the second", func(s string) error {
		if len(o.names) == 2 || strings.TrimSpace(s) == "" {
			return errors.New("give one name per target, at most two, none empty")
		}
		o.names = append(o.names, strings.TrimSpace(s))
		return nil
	})
	fs.Func("threshold", thresholdGrammar, thresholdFlag(&o.thresholds))
	fs.IntVar(&o.rounds, "rounds", 4, "with --compare, rounds per target (the runs or duration are split between them)")
	durationVar(fs, &o.interval, "interval", time.Second, "period of the progress lines and the time series, a `duration`")
	fs.StringVar(&o.progress, "progress", "auto", "auto (a progress bar on a terminal, lines otherwise), bar, lines or none")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), loadUsage)
		fs.PrintDefaults()
	}
	if err := habitFlag(fs, args); err != nil {
		return usageError(fs, err)
	}
	urls, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		return usageError(fs, fmt.Errorf(format, a...))
	}
	if len(urls) != 1 {
		return usageErr("want one URL, got %d", len(urls))
	}
	if o.runs < 0 || o.duration < 0 || o.rate < 0 || o.rounds < 1 || o.interval <= 0 {
		return usageErr("-n, -d and --rate must not be negative, --rounds and --interval must be positive")
	}
	switch o.progress {
	case "auto", "bar", "lines", "none":
	default:
		return usageErr("--progress %q: auto, bar, lines or none", o.progress)
	}
	if kind, _, ok := strings.Cut(o.out, "="); ok && k6Output(kind) {
		return usageErr("--out %s: k6's output=FILE; here --out takes a directory, into which load writes results.json, runs.jsonl and report.md", o.out)
	}
	if o.runs == 0 && o.duration == 0 {
		o.duration = 10 * time.Second
	}
	targets := []string{urls[0]}
	if o.compare != "" {
		targets = append(targets, o.compare)
		if compareFirst(args, urls[0]) {
			targets[0], targets[1] = o.compare, urls[0] // A and B in the command line's order
		}
	}
	if len(o.names) > len(targets) {
		return usageErr("--name: %d names for %d targets", len(o.names), len(targets))
	}
	for _, u := range targets {
		if _, err := load.ParseTarget(u); err != nil {
			return usageErr("%v", err)
		}
	}
	var inputs [][]byte
	for _, name := range o.inputs {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay load: --input: %v\n", err)
			return 1
		}
		if err := load.CheckInput(b); err != nil {
			fmt.Fprintf(stderr, "agui-relay load: --input %s: %v\n", name, err)
			return 1
		}
		inputs = append(inputs, b)
	}
	if o.progress == "auto" {
		o.progress = "lines"
		if tty {
			o.progress = "bar"
		}
	}
	rep := &loadReport{Command: "agui-relay load " + shellQuote(args), Targets: targets, Names: o.names, Started: time.Now()}
	var runs *runsFile
	if o.out != "" {
		var err error
		if runs, err = openRuns(o.out); err != nil {
			fmt.Fprintf(stderr, "agui-relay load: --out: %v\n", err)
			return 1
		}
		defer runs.close()
	}
	for _, c := range o.levels {
		lv := loadLevel{Concurrency: c, Results: make([]*load.Result, len(targets)), rounds: make([][]*load.Result, len(targets))}
		rounds := 1
		if len(targets) > 1 {
			rounds = o.rounds
			if o.runs > 0 && o.runs < int64(rounds) {
				rounds = int(o.runs) // a round makes at least one run
			}
		}
		for round := 0; round < rounds && ctx.Err() == nil; round++ {
			for k := range targets {
				i := k
				if round%2 == 1 {
					i = len(targets) - 1 - k // ABBA: drift in the host falls on both alike
				}
				cfg := load.Config{URL: targets[i], Headers: o.headers, Inputs: inputs, Concurrency: c,
					Runs: splitRuns(o.runs, rounds, round), Duration: o.duration / time.Duration(rounds),
					Drain: o.drain, Ramp: o.ramp, Rate: o.rate, Timeouts: o.timeouts, JudgeEvery: o.judge, Interval: o.interval}
				if o.insecure {
					cfg.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by --insecure
				}
				label := fmt.Sprintf("c=%d", c)
				if len(targets) > 1 {
					label = fmt.Sprintf("c=%d %s round %d/%d", c, rep.name(i), round+1, rounds)
				}
				if runs != nil {
					cfg.Record = runs.recorder(rep.name(i), c, round+1)
				}
				res, err := runOneLoad(ctx, cfg, label, o.progress, stderr)
				if err != nil {
					fmt.Fprintf(stderr, "agui-relay load: %v\n", err)
					return 1
				}
				if lv.Results[i] == nil {
					lv.Results[i] = &load.Result{}
				}
				lv.Results[i].Merge(res)
				lv.rounds[i] = append(lv.rounds[i], res)
				if ctx.Err() != nil {
					break
				}
			}
		}
		lv.roundRatios()
		rep.Levels = append(rep.Levels, lv)
		if ctx.Err() != nil {
			break
		}
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.checkThresholds(o.thresholds)
	rep.text(stdout)
	if o.out != "" {
		if err := runs.close(); err != nil {
			fmt.Fprintf(stderr, "agui-relay load: --out: %v\n", err)
			return 1
		}
		if err := rep.write(o.out); err != nil {
			fmt.Fprintf(stderr, "agui-relay load: --out: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwritten: %s\n", strings.Join(rep.files(o.out), ", "))
	}
	sig := os.Signal(os.Interrupt)
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		sig = sc.sig
	}
	code, why := rep.exitStatus(sig)
	fmt.Fprintf(stdout, "\n%s\n", why)
	return code
}

// The load command's exit statuses past 0 and 2 (usage): 99 for a crossed
// threshold is k6's, apart from a failed run's and a load that could not
// start.
const (
	loadExitFailed     = 1
	loadExitThresholds = 99
)

// exitStatus is the load's exit status and the line that says why. As in
// k6, with --threshold the thresholds alone decide; without, any failed
// run fails the load. A load a signal ended exits 128 + its number, as a
// shell reports it (130 for SIGINT, 143 for SIGTERM).
func (r *loadReport) exitStatus(sig os.Signal) (int, string) {
	runs, failed := r.runs()
	crossed := 0
	for _, t := range r.Thresholds {
		if !t.OK {
			crossed++
		}
	}
	switch {
	case r.Interrupted:
		code := 130
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		return code, fmt.Sprintf("exit %d: interrupted by %s; the report covers what ran until then", code, signalName(sig))
	case len(r.Thresholds) > 0 && crossed > 0:
		return loadExitThresholds, fmt.Sprintf("exit %d: %d of %d threshold verdicts crossed (with --threshold, the thresholds alone decide)", loadExitThresholds, crossed, len(r.Thresholds))
	case len(r.Thresholds) > 0 && failed > 0:
		return 0, fmt.Sprintf("exit 0: every threshold held (with --threshold, the thresholds alone decide: %d of %d runs failed)", failed, runs)
	case len(r.Thresholds) > 0:
		return 0, "exit 0: every threshold held"
	case failed > 0:
		return loadExitFailed, fmt.Sprintf("exit %d: %d of %d runs failed (without --threshold, any failed run fails the load)", loadExitFailed, failed, runs)
	}
	return 0, fmt.Sprintf("exit 0: every run complete (%d)", runs)
}

// signalCause is the cause of a load's context that a signal ended.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "signal " + signalName(c.sig) }

// signalName names a signal as kill -l does: SIGINT, SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// headerFlag parses a repeated "Name: value" flag into headers.
func headerFlag(headers *[]load.Header) func(string) error {
	return func(s string) error {
		k, v, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q is not 'Name: value'", s)
		}
		*headers = append(*headers, load.Header{Name: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
		return nil
	}
}

// splitRuns is round's share of n runs over rounds (0: by duration).
func splitRuns(n int64, rounds, round int) int64 {
	if n == 0 {
		return 0
	}
	share := n / int64(rounds)
	if int64(round) < n%int64(rounds) {
		share++
	}
	return share
}

// compareFirst reports whether --compare comes before the URL url on the
// command line args.
func compareFirst(args []string, url string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--compare" || a == "-compare":
			return true
		case strings.HasPrefix(a, "--compare=") || strings.HasPrefix(a, "-compare="):
			return true
		case a == url:
			return false
		case a == "--":
			return false
		}
	}
	return false
}

// runOneLoad runs one load, showing its progress as asked.
func runOneLoad(ctx context.Context, cfg load.Config, label, progress string, stderr io.Writer) (*load.Result, error) {
	var bar *progressbar.ProgressBar
	switch progress {
	case "bar":
		total := int64(-1) // a spinner: neither -n nor -d
		if cfg.Runs > 0 {
			total = cfg.Runs
		} else if cfg.Duration > 0 {
			total = int64(cfg.Duration / time.Second)
		}
		barWidth, descWidth := progressWidths(terminalColumns(stderr))
		bar = newProgressBar(total, barWidth, label, stderr)
		cfg.Progress = func(p load.Progress) {
			bar.Describe(progressLine(label, p, descWidth))
			if cfg.Runs > 0 {
				bar.Set64(p.Done) //nolint:errcheck // only draws
			} else {
				bar.Set64(min(int64(p.Elapsed/time.Second), total)) //nolint:errcheck // only draws
			}
		}
	case "lines":
		cfg.Progress = func(p load.Progress) { fmt.Fprintln(stderr, "load: "+progressLine(label, p, 0)) }
	}
	res, err := load.Run(ctx, cfg)
	if bar != nil {
		bar.Finish() //nolint:errcheck
		bar.Exit()   //nolint:errcheck
		bar.Clear()  //nolint:errcheck
	}
	return res, err
}

func newProgressBar(total int64, width int, label string, w io.Writer) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
		progressbar.OptionSetWidth(width), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish(),
		progressbar.OptionShowDescriptionAtLineEnd(), progressbar.OptionSetRenderBlankState(true))
}

// terminalColumns is the width of the terminal w writes to; 0 when it is
// not one.
func terminalColumns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			return cols
		}
	}
	return 0
}

// progressWidths splits a terminal's columns between the progress bar and
// its description, so that the line does not wrap: the bar's percentage,
// brackets and [elapsed:left] take barOverhead columns beside the bar.
// With no columns (not a terminal) neither is limited.
func progressWidths(cols int) (bar, desc int) {
	switch {
	case cols <= 0:
		return 20, 0
	case cols < 120:
		bar = 10
	default:
		bar = 20
	}
	return bar, max(cols-bar-barOverhead, 10)
}

// barOverhead is what a progress bar's line holds beside the bar and its
// description: " 45% |", "| ", "[59m59s:1h0m0s]" and the spaces between.
const barOverhead = 27

// progressLine is the progress of a load in at most width runes (0: any),
// the fullest of its forms that fits.
func progressLine(label string, p load.Progress, width int) string {
	forms := []string{
		fmt.Sprintf("%s %4.0fs: runs %d done, %d complete, %d failed, %d in flight; %s events/s, %.1f runs/s",
			label, p.Elapsed.Seconds(), p.Done, p.Complete, p.Failed, p.InFlight, humanCount(p.EventsPerSec), p.RunsSec),
		fmt.Sprintf("%s: %d done, %d failed, %d in flight, %s ev/s, %.1f runs/s",
			label, p.Done, p.Failed, p.InFlight, humanCount(p.EventsPerSec), p.RunsSec),
		fmt.Sprintf("%s: %d done, %d failed, %s ev/s, %.1f runs/s", label, p.Done, p.Failed, humanCount(p.EventsPerSec), p.RunsSec),
		fmt.Sprintf("%s: %d done, %d failed, %.1f runs/s", label, p.Done, p.Failed, p.RunsSec),
		fmt.Sprintf("%d done, %d failed", p.Done, p.Failed),
	}
	for _, f := range forms {
		if width <= 0 || utf8.RuneCountInString(f) <= width {
			return f
		}
	}
	return string([]rune(forms[len(forms)-1])[:width])
}

// humanCount writes a rate with a k or M suffix.
func humanCount(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
