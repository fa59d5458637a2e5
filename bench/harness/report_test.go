package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/plot"
)

func fakeReport() *Report {
	sat := func(n int, eps, cpu float64) []PhaseResult {
		return []PhaseResult{{Streams: n, EventsPerSec: eps, CPUPerMEvents: cpu, RunsOK: 10, Events: 1}}
	}
	paced := func(p99, cpu float64) []PhaseResult {
		return []PhaseResult{{Streams: 1000, Rate: 20, P50: 50, P99: p99, P999: p99 * 2, CPUPerMEvents: cpu, RunsOK: 5, Events: 1}}
	}
	r := &Report{Mode: "full", Config: ConfigInfo{RefSat: 100, RefPaced: 1000, PacedRate: 20, IdleLevels: []int{100}}}
	add := func(name, base string, p Proxy, s, pc []PhaseResult, idle float64) {
		c := CaseResult{Case: Case{Name: name, Proxy: p, Baseline: base}, Name: name, Proxy: p, Sat: s, Paced: pc}
		if idle > 0 {
			c.Idle = []IdleResult{{Streams: 100, Opened: 100, Finished: 100, KiBPerStream: idle}}
		}
		r.Cases = append(r.Cases, c)
	}
	add("direct", "", ProxyNone, sat(100, 1000, 0), paced(100, 0), 0)
	add("agui-relay", "direct", ProxyRelay, sat(100, 900, 1), paced(400, 10), 12)
	add("nginx", "direct", ProxyNginx, sat(100, 600, 2), paced(1500, 20), 16)
	add("agui-relay legacy→1.0", "direct", ProxyRelay, sat(100, 500, 5), paced(2000, 30), 30)
	add("naive legacy→1.0", "direct", ProxyNaive, sat(100, 100, 40), nil, 0)
	return r
}

func TestGoals(t *testing.T) {
	want := map[string]string{
		"pass-through CPU per event ≤ nginx's":                                 "met",
		"pass-through throughput ≥ nginx's":                                    "met",
		"agui-relay legacy→1.0: CPU per event ≤ 2× nginx pass-through":         "missed", // 5 > 2×2
		"agui-relay legacy→1.0: ≥10× cheaper per event than decode-everything": "missed", // 40/5 = 8
		"agui-relay: added p99 < 1 ms at the paced load":                       "met",
		"agui-relay legacy→1.0: added p99 < 1 ms at the paced load":            "missed",
		"agui-relay: < 20 KiB per idle open stream":                            "met",
		"agui-relay legacy→1.0: < 20 KiB per idle open stream":                 "missed",
		"agui-relay 1.0→0.0.45: CPU per event ≤ 2× nginx pass-through":         "n/a",
	}
	got := map[string]string{}
	for _, g := range fakeReport().Goals() {
		got[g.Goal] = g.Met
	}
	for goal, v := range want {
		if got[goal] != v {
			t.Errorf("%s: %q, want %q", goal, got[goal], v)
		}
	}
}

func TestMarkdownRatios(t *testing.T) {
	md := fakeReport().Markdown("go run ./bench/cmd/aguibench --full")
	// agui-relay: 900 ev/s is 1.50× nginx and 0.90× direct; CPU 0.50× nginx.
	for _, want := range []string{"| agui-relay | 900 | 1.50 | 0.90 |", "| 1.00 | 0.50 |", "+300", "--full"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestPlotSVG(t *testing.T) {
	tp, lp := fakeReport().Plots()
	for _, p := range []plot.Plot{tp, lp} {
		s := p.SVG()
		if !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "</svg>") || !strings.Contains(s, "agui-relay") || strings.Contains(s, "NaN") {
			t.Errorf("bad SVG: %.300s", s)
		}
	}
	if s := (plot.Plot{Title: "empty"}).SVG(); !strings.Contains(s, "no data") {
		t.Error("empty plot")
	}
}

// The relay's own latency goes next to its added p99 and into the paced
// section when it was read; a quantile past the last bucket says so.
func TestMarkdownOwnLatency(t *testing.T) {
	r := fakeReport()
	if md := r.Markdown("x"); strings.Contains(md, "own part") {
		t.Errorf("own latency reported though none was read:\n%s", md)
	}
	relay := &r.Cases[1].Paced[0]
	relay.OwnLatencyN, relay.OwnP50, relay.OwnP99 = 1234, 10, 50
	legacy := &r.Cases[3].Paced[0]
	legacy.OwnLatencyN, legacy.OwnP50, legacy.OwnP99 = 9, 25, -1
	md := r.Markdown("x")
	for _, want := range []string{
		"+300 µs; the relay's own part, read to flush: p99 ≤ 50 µs",
		"agui-relay at 1000 streams: p50 ≤ 10 µs, p99 ≤ 50 µs (1234 events)",
		"agui-relay legacy→1.0 at 1000 streams: p50 ≤ 25 µs, p99 > 1 s (9 events)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// A capture's figures make a section of their own, with each proxy's p99
// against nginx's, and go next to the added p99 of the goals; a failed
// capture says why and a run without one says why not.
func TestMarkdownCapture(t *testing.T) {
	r := fakeReport()
	r.Config.CaptureNote = "time in the proxy not measured: tcpdump not installed"
	if md := r.Markdown("x"); strings.Contains(md, "## Time in the proxy") || !strings.Contains(md, "tcpdump not installed") {
		t.Errorf("no capture: section or note wrong:\n%s", md)
	}
	r.Cases[1].Captures = []CaptureResult{
		{Streams: 100, Residence: Residence{Matched: 8000, P50: 40, P99: 250, P999: 400, Max: 500}},
		{Streams: 1000, Residence: Residence{Matched: 80000, UnmatchedIn: 3, UnmatchedOut: 1, P50: 90, P99: 900, P999: 1800, Max: 2500},
			Phase: PhaseResult{P50: 300, P99: 2000}}}
	r.Cases[2].Captures = []CaptureResult{{Streams: 1000, Residence: Residence{Matched: 80000, P50: 100, P99: 600, P999: 900, Max: 1000}}}
	r.Cases[3].Captures = []CaptureResult{{Streams: 1000, Error: "tcpdump exited: permission denied"}}
	md := r.Markdown("x")
	for _, want := range []string{
		"## Time in the proxy (packet capture, 20 events/s per stream)",
		"| agui-relay | 100 | 40 / 250 / 400 | 500 | – | 8000 |",
		"| agui-relay | 1000 | 90 / 900 / 1800 | 2500 | 1.50 | 80000 | 3 / 1 | 0 | 300 / 2000 |",
		"| nginx | 1000 | 100 / 600 / 900 | 1000 | 1.00 |",
		"| agui-relay legacy→1.0 | 1000 | failed: tcpdump exited: permission denied |",
		"+300 µs; in the proxy (packet capture) p99 250 µs at 100 streams, 900 µs at 1000 streams (nginx 600)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// A case whose levels stop below the reference (CopilotKit's) is quoted
// at its highest, and says so; its goal compares it with the relay on the
// same runs at that level.
func TestCappedCaseQuotedAtItsLevel(t *testing.T) {
	r := fakeReport()
	r.Cases = append(r.Cases,
		CaseResult{Case: Case{Name: "copilotkit", Proxy: ProxyCopilotKit, Baseline: "direct"}, Name: "copilotkit", Proxy: ProxyCopilotKit,
			Sat: []PhaseResult{{Streams: 1, EventsPerSec: 5000, CPUPerMEvents: 150, RunsOK: 3, Events: 1}, {Streams: 10, EventsPerSec: 7000, CPUPerMEvents: 120, RunsOK: 9, Events: 1}}},
		CaseResult{Case: Case{Name: "agui-relay (copilotkit's runs)", Proxy: ProxyRelay, Baseline: "direct"}, Name: "agui-relay (copilotkit's runs)", Proxy: ProxyRelay,
			Sat: []PhaseResult{{Streams: 10, EventsPerSec: 90000, CPUPerMEvents: 8, RunsOK: 9, Events: 1}}})
	if md := r.Markdown("x"); !strings.Contains(md, "| copilotkit | 7000 (10 streams) |") {
		t.Errorf("copilotkit row:\n%s", md)
	}
	for _, g := range r.Goals23() {
		if strings.HasPrefix(g.Goal, "≥ 20×") && (g.Met != "missed" || !strings.Contains(g.Measured, "10 streams, the same runs: 120.0 vs 8.00") || !strings.Contains(g.Measured, "15×")) {
			t.Errorf("%s: %s %s", g.Goal, g.Met, g.Measured)
		}
	}
	sp := caseSpec{Case: Case{Name: "copilotkit"}}
	if got := sp.levels([]int{1, 10, 100, 1000}, 0); !slices.Equal(got, []int{1, 10}) {
		t.Errorf("saturation levels %v", got)
	}
	if got := sp.levels([]int{2000}, 1); !slices.Equal(got, []int{100}) {
		t.Errorf("paced levels %v", got)
	}
	if got := (caseSpec{Case: Case{Name: "nginx"}}).levels([]int{1, 10000}, 2); !slices.Equal(got, []int{1, 10000}) {
		t.Errorf("nginx's idle levels %v", got)
	}
}
