package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
)

const loadReportUsage = `usage: agui-relay load report [--out DIR] [--threshold T] DIR...

Adds up the --out directories of several loads run at the same time, on
several machines, against one endpoint (when one machine cannot make the
load: a Kubernetes Indexed Job, deploy/kubernetes/load.yaml), into one
report, as vegeta's report reads the results of several attackers and
k6-operator sums its runners.

Each DIR holds results.json and runs.jsonl. The loads must have as many
levels (-c), which add up in order, and the same targets (--compare,
--name). At each level the counts and
errors add up; the concurrency is the sum of the loads'; the rates are every
run over the span from the earliest start to the latest end (vegeta's
rule); the percentiles are those of every run of every load, from the
loads' histograms added up (HdrHistogram's, which results.json holds),
never an average of percentiles. Each source is named: in the report, in
its table by source and in runs.jsonl, whose lines are every load's with
"source": the DIR it came from. The time series are drawn per source, each
on its own clock.

Exit status: load's rule, with --threshold the thresholds alone decide, 0
when every one held and 99 when one was crossed; without, 0 when every run
of every load was complete and 1 when any failed. 1 when a DIR cannot be
read or does not match the first, 2 on usage errors.

examples:
  # eight pods of the Job wrote /results/0 to /results/7
  agui-relay load report --out /results/all /results/0 /results/1 /results/2 /results/3 \
      /results/4 /results/5 /results/6 /results/7
  # a CI gate on the sum
  agui-relay load report --threshold 'first_event.p99<500ms' --threshold 'errors<1%' a/ b/

flags:
`

// loadSource is one load a report adds up: its --out directory, as given.
type loadSource struct {
	Dir         string    `json:"dir"`
	Command     string    `json:"command"`
	Started     time.Time `json:"started"`
	Seconds     float64   `json:"seconds"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Runs        int64     `json:"runs"`
	Failed      int64     `json:"failed"`
}

// loadReportCommand is agui-relay load report.
func loadReportCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("load report", &cmdOutput{stdout, stderr})
	out := fs.String("out", "", "write report.md, results.json, runs.jsonl (every load's lines, each with its source) and the SVG plots into this directory")
	var ts []threshold
	fs.Func("threshold", "a pass condition on the sum, as load's --threshold; repeat for several", thresholdFlag(&ts))
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), loadReportUsage)
		fs.PrintDefaults()
	}
	dirs, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(dirs) == 0 {
		return usageError(fs, errors.New("want the --out directory of at least one load"))
	}
	for i, d := range dirs {
		dirs[i] = filepath.Clean(d)
		if slices.ContainsFunc(dirs[:i], func(e string) bool { return sameDir(e, dirs[i]) }) {
			return usageError(fs, fmt.Errorf("%s given twice: its runs would count twice", d))
		}
		if *out != "" && sameDir(*out, dirs[i]) {
			return usageError(fs, fmt.Errorf("--out %s is one of the loads: the report would overwrite it", *out))
		}
	}
	srcs := make([]*loadReport, len(dirs))
	for i, d := range dirs {
		r, err := readLoadDir(d)
		if err == nil && i > 0 {
			err = sameLoad(srcs[0], dirs[0], r, d)
		}
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay load report: %v\n", err)
			return 1
		}
		srcs[i] = r
	}
	rep := mergeReports(srcs, dirs)
	rep.Command = "agui-relay load report " + shellQuote(args)
	rep.checkThresholds(ts)
	rep.text(stdout)
	if *out != "" {
		err := mergeRuns(dirs, *out)
		if err == nil {
			err = rep.write(*out)
		}
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay load report: --out: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwritten: %s\n", strings.Join(rep.files(*out), ", "))
	}
	// The sum's status follows load's rule (exitStatus): with --threshold
	// the thresholds alone decide. A source a signal cut is part of the
	// sum, not a signal to this command.
	sum := *rep
	sum.Interrupted = false
	code, why := sum.exitStatus(nil)
	fmt.Fprintf(stdout, "\n%s\n", why)
	return code
}

// sameDir reports whether the paths a and b name one directory, however
// spelt: relative or absolute, through a symbolic link (os.SameFile, as
// cp and rsync refuse a copy onto its source).
func sameDir(a, b string) bool {
	if ia, err := os.Stat(a); err == nil {
		if ib, err := os.Stat(b); err == nil {
			return os.SameFile(ia, ib)
		}
	}
	aa, erra := filepath.Abs(a)
	ab, errb := filepath.Abs(b)
	return erra == nil && errb == nil && aa == ab
}

// readLoadDir reads the report a load wrote into dir, with its histograms.
func readLoadDir(dir string) (*loadReport, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("%s: no results.json: not the --out directory of a load that ended", dir)
	}
	if err != nil {
		return nil, err
	}
	var r loadReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: results.json: %v", dir, err)
	}
	if len(r.Sources) > 0 {
		return nil, fmt.Errorf("%s holds a report of load report: give the directories it adds up", dir)
	}
	if len(r.Levels) == 0 || len(r.Targets) == 0 {
		return nil, fmt.Errorf("%s: results.json holds no level: not the results of agui-relay load", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.jsonl")); err != nil {
		return nil, fmt.Errorf("%s: no runs.jsonl: %v", dir, err)
	}
	for k := range r.Levels {
		lv := &r.Levels[k]
		if len(lv.Results) != len(r.Targets) || len(lv.HDR) != len(r.Targets) {
			return nil, fmt.Errorf("%s: results.json, %d concurrent: no histograms to add up (written by an agui-relay before load report: run the load again)", dir, lv.Concurrency)
		}
		for i, res := range lv.Results {
			if res == nil {
				continue // a --compare load interrupted before its target ran
			}
			if err := res.SetHDR(lv.HDR[i]); err != nil {
				return nil, fmt.Errorf("%s: results.json, %s at %d concurrent: %v", dir, r.name(i), lv.Concurrency, err)
			}
		}
	}
	return &r, nil
}

// sameLoad reports how r, read from the later DIR dir, differs from the
// first load, whose DIR is dir0: the loads must have as many levels, each level
// adding up with the same one of the others (-c 10,100 on one machine and
// -c 20,200 on a larger one: 30, then 300), and the same targets.
func sameLoad(first *loadReport, dir0 string, r *loadReport, dir string) error {
	levels := func(r *loadReport) string {
		var cs []string
		for _, lv := range r.Levels {
			cs = append(cs, fmt.Sprint(lv.Concurrency))
		}
		return "-c " + strings.Join(cs, ",")
	}
	targets := func(r *loadReport) string {
		var ns []string
		for i := range r.Targets {
			ns = append(ns, r.name(i))
		}
		return strings.Join(ns, " and ")
	}
	switch {
	case len(r.Levels) != len(first.Levels):
		return fmt.Errorf("%s ran %s, %s ran %s: the levels differ in number, so its results do not add up with the first's", dir, levels(r), dir0, levels(first))
	case targets(r) != targets(first):
		return fmt.Errorf("%s loaded %s, %s loaded %s: the targets differ, so its results do not add up with the first's", dir, targets(r), dir0, targets(first))
	}
	return nil
}

// mergeReports adds up the loads srcs, read from dirs, level by level and
// target by target.
func mergeReports(srcs []*loadReport, dirs []string) *loadReport {
	first := srcs[0]
	rep := &loadReport{Names: first.Names, Started: first.Started}
	var end time.Time
	for k, s := range srcs {
		if s.Started.Before(rep.Started) {
			rep.Started = s.Started
		}
		if e := s.Started.Add(time.Duration(s.Seconds * float64(time.Second))); e.After(end) {
			end = e
		}
		rep.Interrupted = rep.Interrupted || s.Interrupted
		src := loadSource{Dir: dirs[k], Command: s.Command, Started: s.Started, Seconds: s.Seconds, Interrupted: s.Interrupted}
		src.Runs, src.Failed = s.runs()
		rep.Sources = append(rep.Sources, src)
	}
	rep.Seconds = end.Sub(rep.Started).Seconds()
	for i := range first.Targets {
		var urls []string
		for _, s := range srcs {
			if !slices.Contains(urls, s.Targets[i]) {
				urls = append(urls, s.Targets[i])
			}
		}
		rep.Targets = append(rep.Targets, strings.Join(urls, ", "))
	}
	for k := range first.Levels {
		lv := loadLevel{Results: make([]*load.Result, len(rep.Targets)), rounds: make([][]*load.Result, len(rep.Targets))}
		for _, s := range srcs {
			lv.Concurrency += s.Levels[k].Concurrency
			for label, rs := range s.Levels[k].RoundRatios {
				if lv.RoundRatios == nil {
					lv.RoundRatios = map[string][]float64{}
				}
				lv.RoundRatios[label] = append(lv.RoundRatios[label], rs...)
			}
		}
		for i := range rep.Targets {
			var parts []*load.Result
			for _, s := range srcs {
				parts = append(parts, s.Levels[k].Results[i]) // nil where a source's target did not run
			}
			lv.rounds[i] = parts
			if ran := slices.DeleteFunc(slices.Clone(parts), func(r *load.Result) bool { return r == nil }); len(ran) > 0 {
				lv.Results[i] = load.MergeConcurrent(ran)
				lv.Results[i].URL = rep.Targets[i] // every URL the loads used, as in targets
			}
		}
		rep.Levels = append(rep.Levels, lv)
	}
	return rep
}

// sourcesTable names each load a report adds up, with its share.
func (r *loadReport) sourcesTable() *table {
	t := &table{left: 2, header: []string{"source", "started", "seconds", "runs", "failed", "p99 first event", "p99 run"}}
	for k, s := range r.Sources {
		fe, run := "–", "–"
		if len(r.Levels) == 1 && len(r.Targets) == 1 && r.Levels[0].rounds[0][k] != nil {
			res := r.Levels[0].rounds[0][k]
			// A time no run had (every run refused, say) is "–", as in
			// the timings table, not 0.
			if s := res.Summary(load.FirstEvent); s.N > 0 {
				fe = dur(s.P99)
			}
			if s := res.Summary(load.Whole); s.N > 0 {
				run = dur(s.P99)
			}
		}
		t.add(s.Dir, s.Started.UTC().Format(time.RFC3339), fmt.Sprintf("%.1f", s.Seconds), fmt.Sprint(s.Runs), fmt.Sprint(s.Failed), fe, run)
	}
	return t
}

// mergeRuns writes out/runs.jsonl: the lines of every dir's runs.jsonl, in
// the order of dirs, each with "source" first.
func mergeRuns(dirs []string, out string) (err error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "runs.jsonl"))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	for _, d := range dirs {
		if err := copyRuns(w, d); err != nil {
			return err
		}
	}
	return w.Flush()
}

func copyRuns(w *bufio.Writer, dir string) error {
	name := filepath.Join(dir, "runs.jsonl")
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	src, _ := json.Marshal(dir)
	prefix := append(append([]byte(`{"source":`), src...), ',')
	br := bufio.NewReaderSize(in, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			body := bytes.TrimSpace(line)
			if len(body) < 2 || body[0] != '{' || !json.Valid(body) {
				return fmt.Errorf("%s, line %d: not a JSON object", name, n)
			}
			// Errors of w are sticky: the Flush at the end reports them.
			if len(bytes.TrimSpace(body[1:len(body)-1])) == 0 {
				w.Write(prefix[:len(prefix)-1]) //nolint:errcheck
				w.WriteString("}\n")            //nolint:errcheck
			} else {
				w.Write(prefix)   //nolint:errcheck
				w.Write(body[1:]) //nolint:errcheck
				w.WriteByte('\n') //nolint:errcheck
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
}
