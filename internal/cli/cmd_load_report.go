package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/plot"
)

// loadReport is everything one load command measured.
type loadReport struct {
	Command     string      `json:"command"`
	Targets     []string    `json:"targets"` // A, then B: in the command line's order
	Names       []string    `json:"names,omitempty"`
	Started     time.Time   `json:"started"`
	Seconds     float64     `json:"seconds"`
	Interrupted bool        `json:"interrupted,omitempty"`
	Levels      []loadLevel `json:"levels"`
	// Thresholds are the --threshold verdicts, per target and level.
	Thresholds []thresholdResult `json:"thresholds,omitempty"`
	// Sources are, in a report of load report, the loads it adds up, in
	// the order given; their results are the levels' rounds.
	Sources []loadSource `json:"sources,omitempty"`
}

// name is how the report calls target i: its --name, else A or B.
func (r *loadReport) name(i int) string {
	if i < len(r.Names) {
		return r.Names[i]
	}
	return [...]string{"A", "B"}[i]
}

// loadLevel is one concurrency level: one result per target.
type loadLevel struct {
	Concurrency int            `json:"concurrency"`
	Results     []*load.Result `json:"results"`
	// RoundRatios are, with --compare, B's figure over A's in each round,
	// by the compare table's row.
	RoundRatios map[string][]float64 `json:"round_ratios,omitempty"`
	// HDR are the results' histograms, by target as Results and by timing
	// key, in HdrHistogram's encoding: what load report adds up.
	HDR []map[string]string `json:"hdr,omitempty"`

	rounds [][]*load.Result // per target, each round's own
}

// runs counts the report's judged runs and the failed among them.
func (r *loadReport) runs() (runs, failed int64) {
	for _, lv := range r.Levels {
		for _, res := range lv.Results {
			if res != nil {
				runs += res.Runs
				failed += res.Failed()
			}
		}
	}
	return runs, failed
}

// shellQuote quotes each of args as a POSIX shell reads it back, so that a
// command pasted from a report runs as it ran: a URL with & stays one
// argument.
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// table is a report table, printed as aligned text or as markdown.
type table struct {
	header []string
	rows   [][]string
	// left is how many leading columns are text, aligned left; the others
	// are figures, aligned right. 0 means one.
	left int
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) text(w io.Writer) {
	width := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < max(t.left, 1) {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.header)
	for _, r := range t.rows {
		line(r)
	}
}

func (t *table) markdown(w io.Writer) {
	fmt.Fprintln(w, "| "+strings.Join(t.header, " | ")+" |")
	sep := make([]string, len(t.header))
	for i := range sep {
		sep[i] = "---"
		if i >= max(t.left, 1) {
			sep[i] = "---:"
		}
	}
	fmt.Fprintln(w, "| "+strings.Join(sep, " | ")+" |")
	for _, r := range t.rows {
		fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
	}
}

// dur formats milliseconds in the unit that suits them (µs, ms or s),
// with three significant figures or so: the histograms resolve a
// microsecond.
func dur(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return sig(v*1000) + " µs"
	case v < 1000:
		return sig(v) + " ms"
	}
	return sig(v/1000) + " s"
}

func sig(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(b, a float64) string {
	if a == 0 {
		return "–"
	}
	return fmt.Sprintf("×%.2f", b/a)
}

func timingsTable(res *load.Result) *table {
	t := &table{header: []string{"time", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max", "n"}}
	for _, tm := range load.Timings() {
		s := res.Summary(tm)
		if s.N == 0 {
			t.add(tm.String(), "–", "–", "–", "–", "–", "–", "–", "–", "0")
			continue
		}
		t.add(tm.String(), dur(s.Min), dur(s.Mean), dur(s.P50), dur(s.P90), dur(s.P95), dur(s.P99), dur(s.P999), dur(s.Max), fmt.Sprint(s.N))
	}
	return t
}

// summaryLines are the throughput, completeness and error lines of one
// result.
func summaryLines(res *load.Result) []string {
	lines := []string{
		fmt.Sprintf("throughput: %.1f runs/s, %s events/s, %s/s", res.RunsSec, humanCount(res.EventsSec), humanBytes(res.BytesSec)),
		fmt.Sprintf("runs: %d judged, %d complete (%.1f%%), %d with RUN_FINISHED; %d unfinished (in flight at the load's end: failed)",
			res.Runs, res.Complete, 100*res.Completeness(), res.Finished, res.Unfinished),
	}
	if res.Runs == 0 {
		lines[1] = "runs: none started"
	}
	if res.Interrupted > 0 {
		lines[1] += fmt.Sprintf("; %d cut (not judged)", res.Interrupted)
	}
	if res.Unfinished > 0 && !res.Stopped {
		// A run longer than the drain is cut as a hung one is: k6 users
		// know gracefulStop, not that it fails the run here.
		lines = append(lines, "unfinished: hung, or longer than -d and --drain allow (then raise --drain): how long each had been silent says which")
	}
	how := ""
	switch {
	case res.JudgeEvery == load.JudgeAuto:
		how = fmt.Sprintf(" (every event up to %s a second, a sample above)", humanCount(load.JudgeAutoPerSec))
	case res.JudgeEvery > 1:
		how = fmt.Sprintf(" (one in %d)", res.JudgeEvery)
	}
	order := "every judged run's order and terminal event checked"
	if res.JudgeEvery == load.JudgeAuto {
		order = fmt.Sprintf("every judged run's terminal event checked, and the order of %d (every run's up to %s events a second, a sample above)",
			res.OrderChecked, humanCount(load.OrderAutoPerSec))
	}
	if res.JudgeEvery != 0 {
		lines = append(lines, fmt.Sprintf("events: %d, %d bodies judged by the 1.0 rules%s, %d malformed; %s",
			res.Events, res.Judged, how, res.Malformed, order))
	} else {
		lines = append(lines, fmt.Sprintf("events: %d, bodies not judged; %s", res.Events, order))
	}
	if res.Rate > 0 && res.StartRate > 0 && res.StartRate < 0.95*res.Rate {
		lines = append(lines, fmt.Sprintf("warning: --rate %g not reached: runs started at %.1f a second (every slot was busy: raise -c)", res.Rate, res.StartRate))
	}
	if res.IDsIgnored > 0 {
		lines = append(lines, fmt.Sprintf("ids: %d of %d runs answered with a threadId or runId other than the posted one: the producer ignores them (%s)",
			res.IDsIgnored, res.Runs, res.IDsExample))
	}
	if len(res.Errors) == 0 {
		return append(lines, "errors: none")
	}
	lines = append(lines, "errors:")
	for _, k := range res.ErrorKinds() {
		lines = append(lines, fmt.Sprintf("  %-18s %6d  e.g. %s", k, res.Errors[k], res.Examples[k]))
	}
	return lines
}

// histogramLines draws a timing's histogram as text bars, one a bucket.
func histogramLines(s load.Summary) []string {
	if len(s.Histogram) == 0 {
		return nil
	}
	var most int64
	for _, b := range s.Histogram {
		most = max(most, b.Count)
	}
	lines := []string{"first event histogram:"}
	for _, b := range s.Histogram {
		bar := strings.Repeat("█", int((b.Count*30+most-1)/most))
		if b.Count == 0 {
			bar = ""
		}
		lines = append(lines, fmt.Sprintf("  ≤ %8s  %-30s  %d", dur(b.Le), bar, b.Count))
	}
	return lines
}

func humanBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

// compareRow is one row of the compare table: a figure of a result.
type compareRow struct {
	label  string
	value  func(*load.Result) float64
	format func(float64) string
}

func compareRows() []compareRow {
	var rows []compareRow
	for _, tm := range load.Timings() {
		tm := tm
		rows = append(rows,
			compareRow{tm.String() + " p50", func(r *load.Result) float64 { return r.Summary(tm).P50 }, dur},
			compareRow{tm.String() + " p99", func(r *load.Result) float64 { return r.Summary(tm).P99 }, dur})
	}
	return append(rows,
		compareRow{"events/s", func(r *load.Result) float64 { return r.EventsSec }, humanCount},
		compareRow{"runs/s", func(r *load.Result) float64 { return r.RunsSec }, func(v float64) string { return fmt.Sprintf("%.1f", v) }})
}

// roundRatios fills the level's per-round ratios of B over A.
func (lv *loadLevel) roundRatios() {
	if len(lv.rounds) != 2 {
		return
	}
	lv.RoundRatios = map[string][]float64{}
	for _, row := range compareRows() {
		for k := 0; k < len(lv.rounds[0]) && k < len(lv.rounds[1]); k++ {
			a, b := row.value(lv.rounds[0][k]), row.value(lv.rounds[1][k])
			if a > 0 {
				lv.RoundRatios[row.label] = append(lv.RoundRatios[row.label], b/a)
			}
		}
	}
}

// spread is the range of a row's per-round ratios: "×0.97–1.04 (4)".
func spread(rs []float64) string {
	if len(rs) == 0 {
		return "–"
	}
	lo, hi := rs[0], rs[0]
	for _, v := range rs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("×%.2f–%.2f (%d)", lo, hi, len(rs))
}

// compareTable puts B beside A, with B/A over the whole load and its range
// over the rounds.
func (r *loadReport) compareTable(lv *loadLevel) *table {
	a, b := lv.Results[0], lv.Results[1]
	ratioColumn := r.name(1) + "/" + r.name(0)
	t := &table{header: []string{"", r.name(0), r.name(1), ratioColumn, "rounds min–max"}}
	for _, row := range compareRows() {
		va, vb := row.value(a), row.value(b)
		t.add(row.label, row.format(va), row.format(vb), ratio(vb, va), spread(lv.RoundRatios[row.label]))
	}
	t.add("failed runs", fmt.Sprint(a.Failed()), fmt.Sprint(b.Failed()), "", "")
	return t
}

// levelsTable lists throughput and p99s against concurrency.
func (r *loadReport) levelsTable() *table {
	t := &table{left: 2, header: []string{"concurrency", "target", "runs/s", "events/s", "p99 first content", "p99 run", "failed"}}
	for _, lv := range r.Levels {
		for i, res := range lv.Results {
			if res == nil {
				continue
			}
			t.add(fmt.Sprint(lv.Concurrency), r.name(i), fmt.Sprintf("%.1f", res.RunsSec), humanCount(res.EventsSec),
				dur(res.Summary(load.FirstContent).P99), dur(res.Summary(load.Whole).P99), fmt.Sprint(res.Failed()))
		}
	}
	return t
}

func (r *loadReport) header() []string {
	var h []string
	for i, u := range r.Targets {
		h = append(h, fmt.Sprintf("%s: %s", r.name(i), u))
	}
	if r.Interrupted {
		h = append(h, "interrupted: the report covers what ran until then")
	}
	if len(r.Sources) > 0 {
		loads := "loads"
		if len(r.Sources) == 1 {
			loads = "load"
		}
		h = append(h, fmt.Sprintf("%d %s added up, from %s to %s UTC: the rates are their runs over that span, the percentiles those of all their runs",
			len(r.Sources), loads, r.Started.UTC().Format("15:04:05"), r.Started.Add(time.Duration(r.Seconds*float64(time.Second))).UTC().Format("15:04:05")))
		for _, s := range r.Sources {
			h = append(h, fmt.Sprintf("source %s: %s", s.Dir, s.Command))
		}
	}
	return h
}

func (r *loadReport) text(w io.Writer) {
	for _, l := range r.header() {
		fmt.Fprintln(w, l)
	}
	if len(r.Sources) > 0 {
		fmt.Fprintln(w)
		r.sourcesTable().text(w)
	}
	for _, lv := range r.Levels {
		for i, res := range lv.Results {
			if res == nil {
				continue
			}
			fmt.Fprintf(w, "\n%s, %d concurrent, %.1fs\n", r.name(i), lv.Concurrency, res.Seconds)
			timingsTable(res).text(w)
			for _, l := range histogramLines(res.Summary(load.FirstEvent)) {
				fmt.Fprintln(w, l)
			}
			for _, l := range summaryLines(res) {
				fmt.Fprintln(w, l)
			}
		}
		if len(lv.Results) == 2 && lv.Results[0] != nil && lv.Results[1] != nil {
			fmt.Fprintf(w, "\n%s against %s, %d concurrent, in alternating rounds:\n", r.name(1), r.name(0), lv.Concurrency)
			r.compareTable(&lv).text(w)
		}
	}
	if len(r.Levels) > 1 {
		fmt.Fprintln(w)
		r.levelsTable().text(w)
	}
	if len(r.Thresholds) > 0 {
		fmt.Fprintln(w, "\nthresholds:")
		for _, l := range r.thresholdLines() {
			fmt.Fprintln(w, l)
		}
	}
}

func (r *loadReport) markdown(w io.Writer) {
	fmt.Fprintf(w, "# agui-relay load\n\n`%s`, started %s, %.1fs\n\n", r.Command, r.Started.UTC().Format(time.RFC3339), r.Seconds)
	for _, l := range r.header() {
		fmt.Fprintf(w, "- %s\n", l)
	}
	if len(r.Sources) > 0 {
		fmt.Fprintf(w, "\n## Sources\n\n")
		r.sourcesTable().markdown(w)
	}
	for _, lv := range r.Levels {
		for i, res := range lv.Results {
			if res == nil {
				continue
			}
			fmt.Fprintf(w, "\n## %s, %d concurrent\n\n", r.name(i), lv.Concurrency)
			timingsTable(res).markdown(w)
			fmt.Fprintln(w)
			if h := histogramLines(res.Summary(load.FirstEvent)); len(h) > 0 {
				fmt.Fprintf(w, "```\n%s\n```\n\n", strings.Join(h, "\n"))
			}
			for _, l := range summaryLines(res) {
				if strings.HasPrefix(l, "  ") {
					fmt.Fprintf(w, "  - %s\n", strings.TrimSpace(l))
				} else {
					fmt.Fprintf(w, "- %s\n", l)
				}
			}
		}
		if len(lv.Results) == 2 && lv.Results[0] != nil && lv.Results[1] != nil {
			fmt.Fprintf(w, "\n## %s against %s, %d concurrent\n\n", r.name(1), r.name(0), lv.Concurrency)
			r.compareTable(&lv).markdown(w)
		}
	}
	if len(r.Levels) > 1 {
		fmt.Fprintf(w, "\n## Against concurrency\n\n")
		r.levelsTable().markdown(w)
		fmt.Fprintf(w, "\n![throughput](throughput.svg)\n![p99](p99.svg)\n")
	}
	if len(r.Thresholds) > 0 {
		fmt.Fprintf(w, "\n## Thresholds\n\n")
		for _, l := range r.thresholdLines() {
			fmt.Fprintf(w, "- %s\n", strings.TrimSpace(l))
		}
	}
	fmt.Fprintf(w, "\n![time to first event over time](latency.svg)\n![throughput over time](events.svg)\n![failed runs over time](errors.svg)\n![time to first event: histogram](histogram.svg)\n")
}

// plots returns the SVG plots by file name. The time series are drawn on
// the load's own clock: with --compare each round where it ran, the
// target's line broken between its rounds.
func (r *loadReport) plots() map[string]plot.Plot {
	lat := plot.Plot{Title: "Time to first event over time, by when it came", XLabel: "seconds since the start", YLabel: "ms"}
	evs := plot.Plot{Title: "Throughput over time", XLabel: "seconds since the start", YLabel: "events/s"}
	errs := plot.Plot{Title: "Failed runs over time, by when they ended", XLabel: "seconds since the start", YLabel: "failed runs per interval"}
	hist := plot.Plot{Title: "Time to first event: histogram", XLabel: "ms (upper bound of the bucket)", YLabel: "runs", LogX: true}
	gap := math.NaN()
	for _, lv := range r.Levels {
		for i, res := range lv.Results {
			if res == nil {
				continue
			}
			name := fmt.Sprintf("%s c=%d", r.name(i), lv.Concurrency)
			p50, p99 := plot.Series{Name: name + " p50"}, plot.Series{Name: name + " p99"}
			ev, fl := plot.Series{Name: name}, plot.Series{Name: name}
			rounds := []*load.Result{res}
			if i < len(lv.rounds) && len(lv.rounds[i]) > 0 {
				rounds = lv.rounds[i]
			}
			for k, rd := range rounds {
				if rd == nil {
					continue
				}
				if len(r.Sources) > 0 {
					// Sources ran at once, each on its own clock: a line each.
					if k > 0 {
						lat.Series = append(lat.Series, p50, p99)
						evs.Series, errs.Series = append(evs.Series, ev), append(errs.Series, fl)
					}
					sn := fmt.Sprintf("%s %s c=%d", r.Sources[k].Dir, r.name(i), rd.Concurrency)
					p50, p99 = plot.Series{Name: sn + " p50"}, plot.Series{Name: sn + " p99"}
					ev, fl = plot.Series{Name: sn}, plot.Series{Name: sn}
				} else if k > 0 {
					for _, s := range []*plot.Series{&p50, &p99, &ev, &fl} {
						s.Points = append(s.Points, plot.Point{Y: gap})
					}
				}
				off := rd.Started.Sub(r.Started).Seconds()
				for _, pt := range rd.Series {
					x := off + pt.At
					ev.Points = append(ev.Points, plot.Point{X: x, Y: pt.EventsPerSec})
					fl.Points = append(fl.Points, plot.Point{X: x, Y: float64(pt.Failed)})
					if pt.FirstEvent.N > 0 {
						p50.Points = append(p50.Points, plot.Point{X: x, Y: pt.FirstEvent.P50})
						p99.Points = append(p99.Points, plot.Point{X: x, Y: pt.FirstEvent.P99})
					}
				}
			}
			lat.Series = append(lat.Series, p50, p99)
			evs.Series, errs.Series = append(evs.Series, ev), append(errs.Series, fl)
			h := plot.Series{Name: name}
			for _, b := range res.Summary(load.FirstEvent).Histogram {
				h.Points = append(h.Points, plot.Point{X: b.Le, Y: float64(b.Count)})
			}
			hist.Series = append(hist.Series, h)
		}
	}
	out := map[string]plot.Plot{"latency.svg": lat, "events.svg": evs, "errors.svg": errs, "histogram.svg": hist}
	if len(r.Levels) > 1 {
		tp := plot.Plot{Title: "Throughput against concurrency", XLabel: "concurrent runs", YLabel: "events/s", LogX: true}
		p99 := plot.Plot{Title: "p99 time to first event and gap between events against concurrency", XLabel: "concurrent runs", YLabel: "ms", LogX: true}
		for i := range r.Targets {
			s1 := plot.Series{Name: r.name(i)}
			fe, gp := plot.Series{Name: r.name(i) + " first event"}, plot.Series{Name: r.name(i) + " gap"}
			for _, lv := range r.Levels {
				if i < len(lv.Results) && lv.Results[i] != nil {
					c := float64(lv.Concurrency)
					s1.Points = append(s1.Points, plot.Point{X: c, Y: lv.Results[i].EventsSec})
					fe.Points = append(fe.Points, plot.Point{X: c, Y: lv.Results[i].Summary(load.FirstEvent).P99})
					gp.Points = append(gp.Points, plot.Point{X: c, Y: lv.Results[i].Summary(load.Gap).P99})
				}
			}
			tp.Series, p99.Series = append(tp.Series, s1), append(p99.Series, fe, gp)
		}
		out["throughput.svg"], out["p99.svg"] = tp, p99
	}
	return out
}

func (r *loadReport) files(dir string) []string {
	names := []string{"report.md", "results.json", "runs.jsonl"}
	for n := range r.plots() {
		names = append(names, n)
	}
	sort.Strings(names[3:])
	for i := range names {
		names[i] = filepath.Join(dir, names[i])
	}
	return names
}

func (r *loadReport) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for k := range r.Levels {
		lv := &r.Levels[k]
		lv.HDR = make([]map[string]string, len(lv.Results))
		for i, res := range lv.Results {
			if res == nil {
				continue
			}
			h, err := res.HDR()
			if err != nil {
				return err
			}
			lv.HDR[i] = h
		}
	}
	var md strings.Builder
	r.markdown(&md)
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{"report.md": []byte(md.String()), "results.json": append(js, '\n')}
	for n, p := range r.plots() {
		files[n] = []byte(p.SVG())
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
