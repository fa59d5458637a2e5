package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
)

// thresholdGrammar is --threshold's help, and the documentation's.
const thresholdGrammar = `a pass condition, k6-like; with thresholds they alone decide the exit status (99 when one is crossed); repeat for several.
METRIC OP VALUE, OP one of < <= > >=:
  TIMING.STAT, TIMING headers, first_event, first_content, gap or run, STAT min, mean, p50, p90, p95, p99, p99.9 or max, VALUE a duration as Go writes it, with a unit ns, us (µs), ms, s, m or h ('first_event.p99<200ms');
  errors (failed runs among the judged) or complete, VALUE a percentage ('errors<0.1%');
  runs_per_sec or events_per_sec ('events_per_sec>=100000').
Each target and level is held to each threshold`

// threshold is one parsed --threshold.
type threshold struct {
	text   string
	metric string // a timing key, "errors", "complete", "runs_per_sec" or "events_per_sec"
	stat   string // with a timing
	op     string
	value  float64 // ms for timings, a fraction for errors and complete
}

var thresholdStats = map[string]func(load.Summary) float64{
	"min": func(s load.Summary) float64 { return s.Min }, "mean": func(s load.Summary) float64 { return s.Mean },
	"p50": func(s load.Summary) float64 { return s.P50 }, "p90": func(s load.Summary) float64 { return s.P90 },
	"p95": func(s load.Summary) float64 { return s.P95 },
	"p99": func(s load.Summary) float64 { return s.P99 }, "p99.9": func(s load.Summary) float64 { return s.P999 },
	"max": func(s load.Summary) float64 { return s.Max },
}

var thresholdTimings = map[string]load.Timing{
	"headers": load.Headers, "first_event": load.FirstEvent, "first_content": load.FirstContent, "gap": load.Gap, "run": load.Whole,
}

// parseThreshold reads one --threshold.
func parseThreshold(s string) (threshold, error) {
	t := threshold{text: strings.TrimSpace(s)}
	i := strings.IndexAny(t.text, "<>")
	if i <= 0 {
		return t, fmt.Errorf("%q: want METRIC OP VALUE, OP one of < <= > >=", s)
	}
	metric, rest := strings.TrimSpace(t.text[:i]), t.text[i:]
	t.op = rest[:1]
	if strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, ">=") {
		t.op = rest[:2]
	}
	val := strings.TrimSpace(rest[len(t.op):])
	num := func(v string) (float64, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%q: %q is not a number of at least 0", s, v)
		}
		return f, nil
	}
	var err error
	switch metric {
	case "errors", "complete":
		t.metric = metric
		if !strings.HasSuffix(val, "%") {
			return t, fmt.Errorf("%q: %s takes a percentage ('errors<0.1%%')", s, metric)
		}
		if t.value, err = num(strings.TrimSuffix(val, "%")); err != nil {
			return t, err
		}
		t.value /= 100
		return t, nil
	case "runs_per_sec", "events_per_sec":
		t.metric = metric
		t.value, err = num(val)
		return t, err
	}
	name, stat, ok := strings.Cut(metric, ".")
	if _, known := thresholdTimings[name]; !ok || !known {
		return t, fmt.Errorf("%q: unknown metric %q (a timing headers, first_event, first_content, gap or run with .STAT; errors, complete, runs_per_sec, events_per_sec)", s, metric)
	}
	if thresholdStats[stat] == nil {
		return t, fmt.Errorf("%q: unknown statistic %q (min, mean, p50, p90, p95, p99, p99.9, max)", s, stat)
	}
	t.metric, t.stat = name, stat
	// A time is a duration as Go's time.ParseDuration reads it.
	d, err := time.ParseDuration(val)
	switch {
	case err != nil && strings.Trim(val, "0123456789.") == "" && val != "":
		return t, fmt.Errorf("%q: a time takes a unit: ns, us (µs), ms, s, m or h", s)
	case err != nil || d < 0:
		return t, fmt.Errorf("%q: %q is not a duration of at least 0 (200ms, 1.5s, 500us)", s, val)
	}
	t.value = float64(d) / float64(time.Millisecond)
	return t, nil
}

// thresholdFlag parses a repeated --threshold into ts.
func thresholdFlag(ts *[]threshold) func(string) error {
	return func(s string) error {
		t, err := parseThreshold(s)
		if err == nil {
			*ts = append(*ts, t)
		}
		return err
	}
}

// check returns a result's value for the threshold, formatted, and whether
// it holds; a timing with no value does not.
func (t threshold) check(res *load.Result) (string, bool) {
	var v float64
	var shown string
	switch t.metric {
	case "errors", "complete":
		if res.Runs == 0 {
			return "no run ended", false
		}
		v = float64(res.Failed()) / float64(res.Runs)
		if t.metric == "complete" {
			v = res.Completeness()
		}
		shown = fmt.Sprintf("%.3g%%", 100*v)
	case "runs_per_sec":
		v, shown = res.RunsSec, fmt.Sprintf("%.1f runs/s", res.RunsSec)
	case "events_per_sec":
		v, shown = res.EventsSec, humanCount(res.EventsSec)+" events/s"
	default:
		s := res.Summary(thresholdTimings[t.metric])
		if s.N == 0 {
			return "no value", false
		}
		v = thresholdStats[t.stat](s)
		shown = dur(v)
	}
	switch t.op {
	case "<":
		return shown, v < t.value
	case "<=":
		return shown, v <= t.value
	case ">":
		return shown, v > t.value
	}
	return shown, v >= t.value
}

// thresholdResult is one threshold held to one target at one level.
type thresholdResult struct {
	Threshold   string `json:"threshold"`
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	Value       string `json:"value"`
	OK          bool   `json:"ok"`
}

// checkThresholds holds every result of the report to every threshold.
func (r *loadReport) checkThresholds(ts []threshold) {
	for _, t := range ts {
		for _, lv := range r.Levels {
			for i, res := range lv.Results {
				if res == nil {
					continue
				}
				v, ok := t.check(res)
				r.Thresholds = append(r.Thresholds, thresholdResult{Threshold: t.text, Target: r.name(i), Concurrency: lv.Concurrency, Value: v, OK: ok})
			}
		}
	}
}

// thresholdLines say how each threshold went, the failed first.
func (r *loadReport) thresholdLines() []string {
	var failed, held []string
	for _, t := range r.Thresholds {
		l := fmt.Sprintf("%s: %s, %d concurrent: %s", t.Threshold, t.Target, t.Concurrency, t.Value)
		if t.OK {
			held = append(held, "  ok      "+l)
		} else {
			failed = append(failed, "  FAILED  "+l)
		}
	}
	return append(failed, held...)
}
