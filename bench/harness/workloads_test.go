package harness

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/synth"
)

// secondReport is a report of the workloads beside the bench's own: three
// rounds, the relay's CPU per event in each round against nginx's in the
// same round.
func secondReport() *Report {
	sc := FullSecond()
	r := &Report{Mode: "full", SecondConfig: &sc, Config: ConfigInfo{RefSat: 100, RefPaced: 1000, PacedRate: 20}}
	rounds := func(cpu ...float64) []RoundResult {
		var out []RoundResult
		for i, c := range cpu {
			out = append(out, RoundResult{Round: i + 1, Seconds: 1, Runs: 40, Events: 1000, EventsPerSec: 1000 / c, CPUPerMEvents: c, CPUPerRunUS: c * 10, RunsOK: 40})
		}
		return out
	}
	first := func(p99s ...float64) []RoundResult {
		var out []RoundResult
		for i, p := range p99s {
			for _, rate := range sc.FirstRates {
				out = append(out, RoundResult{Round: i + 1, Rate: rate, Seconds: 1, Runs: 100, Events: 900, RunsOK: 100, FirstN: 100, FirstP50: p / 4, FirstP99: p})
			}
		}
		return out
	}
	r.Second = []SecondResult{
		{Name: "direct", Proxy: ProxyNone, Long: rounds(0, 0, 0), Runs: rounds(0, 0, 0), First: first(100, 100, 100)},
		{Name: "nginx", Proxy: ProxyNginx, Long: rounds(0.2, 0.4, 0.2), Runs: rounds(5, 5, 10), First: first(300, 400, 350)},
		// ×0.9 / ×0.5 / ×1.1 nginx's: median ×0.9. Runs ×1.4 / ×1.2 /
		// ×0.8: median ×1.2, on the line.
		{Name: "agui-relay", Proxy: ProxyRelay, Long: rounds(0.18, 0.2, 0.22), Runs: rounds(7, 6, 8), First: first(390, 600, 500)},
		// ×2 in every round.
		{Name: "agui-relay 1.0→0.0.45", Proxy: ProxyRelay, Long: rounds(0.4, 0.8, 0.4)},
		{Name: "caddy", Proxy: ProxyCaddy, Skipped: "caddy not installed"},
		// ×1.2 / ×1.0 / ×0.6: median ×1.0.
		{Name: "fasthttp", Proxy: ProxyFastHTTP, Runs: rounds(6, 5, 6)},
	}
	return r
}

func TestGoals23(t *testing.T) {
	want := map[string]string{
		"pass-through CPU per event ≤ nginx's at saturation, on both workloads": "met",
		"runs of 5 events ≤ 1.2× nginx's CPU per event":                         "met",
		"translating (1.0→0.0.45) CPU per event ≤ 1.5× nginx's pass-through":    "missed",
		"paced CPU per event within 5% of tcpcopy's":                            "n/a",
		// Added p99: relay 290 / 500 / 400 (median 400), nginx 200 / 300 /
		// 250 (median 250): 150 over.
		"added time to first event ≤ nginx's + 100 µs at p99, 1000 new runs/s": "missed",
	}
	got := map[string]Goal{}
	for _, g := range secondReport().Goals23() {
		got[g.Goal] = g
	}
	for goal, v := range want {
		if got[goal].Met != v {
			t.Errorf("%s: %q (%s), want %q", goal, got[goal].Met, got[goal].Measured, v)
		}
	}
	if m := got["runs of 5 events ≤ 1.2× nginx's CPU per event"].Measured; !strings.Contains(m, "×1.20 (1.40 / 1.20 / 0.80)") ||
		!strings.Contains(m, "fasthttp's server and client alone ×1.00 (1.20 / 1.00 / 0.60)") {
		t.Errorf("runs: %s", m)
	}
	if m := got["added time to first event ≤ nginx's + 100 µs at p99, 100 new runs/s"].Measured; !strings.Contains(m, "+400 (+290 / +500 / +400)") || !strings.Contains(m, "nginx +250") {
		t.Errorf("first event: %s", m)
	}
	// With the relay 50 µs over nginx's added p99 at the median, met.
	r := secondReport()
	for i := range r.Second[2].First {
		r.Second[2].First[i].FirstP99 -= 100
	}
	for _, g := range r.Goals23() {
		if strings.HasPrefix(g.Goal, "added time to first event") && g.Met != "met" {
			t.Errorf("%s: %s %s", g.Goal, g.Met, g.Measured)
		}
	}
}

// The report gives each workload's median over the rounds and every
// round's figure, the ratios taken within a round, and says what was
// skipped; an incomplete round is a problem that fails the command.
func TestSecondSection(t *testing.T) {
	r := secondReport()
	md := r.Markdown("go run ./bench/cmd/aguibench --workloads all")
	for _, want := range []string{
		"## Goals (issue #23)",
		"### Saturation: 40 runs of 40000 content deltas at once",
		"| agui-relay | 0.20 (0.18 / 0.20 / 0.22) | 0.90 (0.90 / 0.50 / 1.10) |",
		"| agui-relay 1.0→0.0.45 | 0.40 (0.40 / 0.80 / 0.40) | 2.00 (2.00 / 2.00 / 2.00) |",
		"| caddy | skipped: caddy not installed |",
		"### The cost of a run: 40 workers, each making 1500 runs of 5 content deltas",
		"### Time to first event at 1000 new runs per second",
		"| agui-relay | 125 (97.5 / 150 / 125) | 500 (390 / 600 / 500) | +400 (+290 / +500 / +400) | +150 (+90 / +200 / +150) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if ps := r.Problems(); len(ps) != 0 {
		t.Errorf("problems in a complete report: %v", ps)
	}
	r.Second[2].Runs[1].RunsBad, r.Second[2].Runs[1].FirstError = 2, "3 stamped events missing"
	if ps := r.Problems(); len(ps) != 1 || !strings.Contains(ps[0], "agui-relay, runs round 2") || !strings.Contains(ps[0], "missing") {
		t.Errorf("problems %v", ps)
	}
}

// The runs of the second workloads are one text message; the translated
// case's inside a subagent pair, and only its count may change.
func TestSecondParams(t *testing.T) {
	cases := secondCases(nil)
	if len(cases) != len(secondNames) {
		t.Fatalf("cases %v", cases)
	}
	for _, c := range cases {
		rp := secondParams(c, 40000, 10)
		plan := synth.NewMixedPlan(rp.Dialect, rp.Events, rp.Mix)
		translated := c.Name == "agui-relay 1.0→0.0.45"
		if c.Exact == translated || !rp.TextOnly || (rp.SubagentEvery > 0) != translated || plan.Stamped != 40000 {
			t.Errorf("%s: %+v, %d stamped", c.Name, rp, plan.Stamped)
		}
	}
	if got := secondCases([]string{"nginx", "agui-relay*"}); len(got) != 3 {
		t.Errorf("only: %v", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
