package harness

import (
	"fmt"
	"strings"
)

// second returns the named case's results of the second workloads, nil
// when absent or not measured.
func (r *Report) second(name string) *SecondResult {
	for i := range r.Second {
		if s := &r.Second[i]; s.Name == name && s.Error == "" && s.Skipped == "" {
			return s
		}
	}
	return nil
}

// roundsOf picks one workload's rounds of a case (the time to first event
// at one rate when rate > 0).
type roundsOf func(*SecondResult) []RoundResult

func longRounds(s *SecondResult) []RoundResult { return s.Long }
func runRounds(s *SecondResult) []RoundResult  { return s.Runs }
func firstRounds(rate float64) roundsOf {
	return func(s *SecondResult) []RoundResult {
		var out []RoundResult
		for _, r := range s.First {
			if r.Rate == rate {
				out = append(out, r)
			}
		}
		return out
	}
}

// spread is a figure over the rounds: each round's, and their median.
type spread struct {
	Rounds []float64
	Median float64
}

func (s spread) String() string {
	if len(s.Rounds) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s)", fmtG(s.Median), joinG(s.Rounds, " / "))
}

func fmtG(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func joinG(vs []float64, sep string) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, fmtG(v))
	}
	return strings.Join(parts, sep)
}

// figure is f of each of a case's rounds.
func figure(s *SecondResult, rounds roundsOf, f func(RoundResult) float64) spread {
	var sp spread
	if s == nil {
		return sp
	}
	for _, r := range rounds(s) {
		sp.Rounds = append(sp.Rounds, f(r))
	}
	sp.Median = median(sp.Rounds)
	return sp
}

// against is f of each round of s divided by f of the same round of base:
// the ratio within a round, where both took the machine as it was.
func against(s, base *SecondResult, rounds roundsOf, f func(RoundResult) float64) spread {
	var sp spread
	if s == nil || base == nil {
		return sp
	}
	a, b := rounds(s), rounds(base)
	for i := range a {
		if i < len(b) && f(b[i]) != 0 && f(a[i]) != 0 {
			sp.Rounds = append(sp.Rounds, f(a[i])/f(b[i]))
		}
	}
	sp.Median = median(sp.Rounds)
	return sp
}

// addedP99 is, per round, the p99 time to first event of s less
// direct's in the same round.
func addedP99(s, direct *SecondResult, rounds roundsOf) spread {
	var sp spread
	if s == nil || direct == nil {
		return sp
	}
	a, b := rounds(s), rounds(direct)
	for i := range a {
		if i < len(b) && a[i].FirstN > 0 && b[i].FirstN > 0 {
			sp.Rounds = append(sp.Rounds, a[i].FirstP99-b[i].FirstP99)
		}
	}
	sp.Median = median(sp.Rounds)
	return sp
}

func cpuPerM(r RoundResult) float64 { return r.CPUPerMEvents }

// secondProblems lists the incomplete runs of the second workloads.
func (r *Report) secondProblems() []string {
	var out []string
	for _, s := range r.Second {
		if s.Skipped != "" {
			continue
		}
		if s.Error != "" {
			out = append(out, s.Name+" (second workloads): "+s.Error)
			continue
		}
		for _, w := range []struct {
			name string
			rs   []RoundResult
		}{{WorkloadLong, s.Long}, {WorkloadRuns, s.Runs}, {WorkloadFirst, s.First}} {
			for _, rr := range w.rs {
				if !rr.complete() {
					out = append(out, fmt.Sprintf("%s, %s round %d: %d complete, %d incomplete, %d failed runs: %s", s.Name, w.name, rr.Round, rr.RunsOK, rr.RunsBad, rr.RunsFailed, rr.FirstError))
				}
			}
		}
	}
	return out
}

// secondSection writes the second workloads' tables.
func (r *Report) secondSection(w func(string, ...any)) {
	if len(r.Second) == 0 || r.SecondConfig == nil {
		return
	}
	sc := r.SecondConfig
	nginx, direct := r.second("nginx"), r.second("direct")
	w("\n## Beside the bench's own workload (issue #23)\n\n")
	w("Text-only runs (RUN_STARTED, TEXT_MESSAGE_START, the TEXT_MESSAGE_CONTENT deltas, TEXT_MESSAGE_END, RUN_FINISHED) from a producer on Go's net/http writing each body in %d-byte slices as fast as it can; in the translated case (1.0→0.0.45) the message sits inside a SUBAGENT_STARTED/FINISHED pair and every %dth delta carries its subagentRunId. The cases take turns in each of %d rounds; CPU is the proxy's, from /proc, read before a load's first run and after its last. Figures: the median over the rounds, each round's in brackets; ratios are taken within each round.\n",
		sc.Slice, sc.LongSubagentEvery, sc.Rounds)
	skipped := func() {
		for _, s := range r.Second {
			if s.Skipped != "" || s.Error != "" {
				w("| %s | skipped: %s |\n", s.Name, oneLine(s.Skipped+s.Error, 160))
			}
		}
	}
	if r.hasRounds(longRounds) {
		w("\n### Saturation: %d runs of %d content deltas at once\n\n", sc.LongStreams, sc.LongEvents)
		w("| case | CPU s/M ev | × nginx | M events/s | × nginx | runs complete |\n|---|---|---|---|---|---:|\n")
		for i := range r.Second {
			s := &r.Second[i]
			if len(s.Long) == 0 {
				continue
			}
			w("| %s | %s | %s | %s | %s | %s |\n", s.Name, figure(s, longRounds, cpuPerM), against(s, nginx, longRounds, cpuPerM),
				figure(s, longRounds, func(r RoundResult) float64 { return r.EventsPerSec / 1e6 }),
				against(s, nginx, longRounds, func(r RoundResult) float64 { return r.EventsPerSec }), completeOf(s.Long))
		}
		skipped()
		r.profileTable(w, WorkloadLong)
	}
	if r.hasRounds(runRounds) {
		w("\n### The cost of a run: %d workers, each making %d runs of %d content deltas one after another on a kept connection\n\n", sc.RunWorkers, sc.RunsPerWorker, sc.RunEvents)
		w("| case | CPU s/M ev | × nginx | CPU µs per run | runs/s | × nginx | runs complete |\n|---|---|---|---|---|---|---:|\n")
		for i := range r.Second {
			s := &r.Second[i]
			if len(s.Runs) == 0 {
				continue
			}
			perSec := func(r RoundResult) float64 { return float64(r.Runs) / r.Seconds }
			w("| %s | %s | %s | %s | %s | %s | %s |\n", s.Name, figure(s, runRounds, cpuPerM), against(s, nginx, runRounds, cpuPerM),
				figure(s, runRounds, func(r RoundResult) float64 { return r.CPUPerRunUS }), figure(s, runRounds, perSec),
				against(s, nginx, runRounds, perSec), completeOf(s.Runs))
		}
		skipped()
		r.profileTable(w, WorkloadRuns)
	}
	for _, rate := range sc.FirstRates {
		rounds := firstRounds(rate)
		if !r.hasRounds(rounds) {
			continue
		}
		w("\n### Time to first event at %g new runs per second (runs of %d content deltas; µs from the request's write to the first event read; the first %gs of each load left out)\n\n", rate, sc.RunEvents, sc.FirstWarmup)
		w("| case | p50 | p99 | p99 added to direct's | added p99 − nginx's added p99 | CPU µs per run | runs complete |\n|---|---|---|---|---|---|---:|\n")
		nAdded := addedP99(nginx, direct, rounds)
		for i := range r.Second {
			s := &r.Second[i]
			rs := rounds(s)
			if len(rs) == 0 {
				continue
			}
			added, vsNginx := "–", "–"
			if s.Name != "direct" {
				a := addedP99(s, direct, rounds)
				added = signed(a)
				if s.Name != "nginx" && len(nAdded.Rounds) == len(a.Rounds) {
					var d spread
					for j := range a.Rounds {
						d.Rounds = append(d.Rounds, a.Rounds[j]-nAdded.Rounds[j])
					}
					d.Median = median(d.Rounds)
					vsNginx = signed(d)
				}
			}
			w("| %s | %s | %s | %s | %s | %s | %s |\n", s.Name, figure(s, rounds, func(r RoundResult) float64 { return r.FirstP50 }),
				figure(s, rounds, func(r RoundResult) float64 { return r.FirstP99 }), added, vsNginx,
				figure(s, rounds, func(r RoundResult) float64 { return r.CPUPerRunUS }), completeOf(rs))
		}
		skipped()
	}
}

// profileTable writes what the windows under perf (--profile) of one
// workload show per case, when it took any.
func (r *Report) profileTable(w func(string, ...any), workload string) {
	type row struct {
		name string
		p    WorkloadProfile
	}
	var rows []row
	for _, s := range r.Second {
		for _, p := range s.Profiles {
			if p.Workload == workload {
				rows = append(rows, row{s.Name, p})
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	per := rows[0].p.Per
	w("\nUnder perf (`--profile`), one more load per proxy after the rounds: system calls and context switches per %s (perf stat), and the proxy's CPU samples (perf record, cpu-clock, self time) grouped by symbol; files in `profiles/<case>-%s.*`.\n\n", per, workload)
	w("| case | CPU µs per %s | system calls per %s | by call | context switches per %s | CPU samples | kernel | Go runtime: scheduler / GC / malloc / other | Go library | fasthttp | gjson/sjson | relay's own: admit/rules / translate / event / wire / relay / metrics | other |\n|---|---|---|---|---|---:|---|---|---|---|---|---|---|\n", per, per, per)
	pct := func(m map[string]float64, gs ...string) string {
		var parts []string
		var sum float64
		for _, g := range gs {
			parts = append(parts, fmt.Sprintf("%.1f", m[g]))
			sum += m[g]
		}
		if sum == 0 {
			return "–"
		}
		if len(gs) == 1 {
			return parts[0] + "%"
		}
		return fmt.Sprintf("%.1f%% (%s)", sum, strings.Join(parts, " / "))
	}
	for _, rw := range rows {
		p := rw.p
		if p.Error != "" && len(p.Syscalls) == 0 && p.CPU == nil {
			w("| %s | not profiled: %s |\n", rw.name, oneLine(p.Error, 200))
			continue
		}
		all, by := "–", "–"
		if len(p.Syscalls) > 0 {
			all, by = syscallsByCall(p.Syscalls)
		}
		cpu := "| – | – | – | – | – | – | – | – "
		if p.CPU != nil {
			cpu = fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %s ", p.Samples, pct(p.CPU, grKernel), pct(p.CPU, grSched, grGC, grMalloc, grRuntime), pct(p.CPU, grGoLib),
				pct(p.CPU, grFastHTTP), pct(p.CPU, grGJSON), pct(p.CPU, grAdmit, grTranslate, grEvent, grWire, grRelay, grMetrics), pct(p.CPU, grOther))
		}
		note := ""
		if p.Error != "" {
			note = " (" + oneLine(p.Error, 120) + ")"
		}
		w("| %s%s | %s | %s | %s | %s %s|\n", rw.name, note, fmtPer(p.CPUPerUnitUS), all, by, fmtPer(p.ContextSwitches), cpu)
	}
}

// signed prints a spread of differences with their signs.
func signed(s spread) string {
	if len(s.Rounds) == 0 {
		return "–"
	}
	var parts []string
	for _, v := range s.Rounds {
		parts = append(parts, fmt.Sprintf("%+.0f", v))
	}
	return fmt.Sprintf("%+.0f (%s)", s.Median, strings.Join(parts, " / "))
}

func (r *Report) hasRounds(rounds roundsOf) bool {
	for i := range r.Second {
		if len(rounds(&r.Second[i])) > 0 {
			return true
		}
	}
	return false
}

func completeOf(rs []RoundResult) string {
	var ok, all int64
	for _, r := range rs {
		ok += r.RunsOK
		all += r.RunsOK + r.RunsBad + r.RunsFailed
	}
	if ok == all {
		return fmt.Sprint(ok)
	}
	return fmt.Sprintf("**%d of %d**", ok, all)
}

// Goals23 evaluates issue #23's goals against this run: the bench's own
// workload at its reference levels and the workloads beside it (medians
// over their rounds).
func (r *Report) Goals23() []Goal {
	var gs []Goal
	na := func(goal, why string) { gs = append(gs, Goal{goal, why, "n/a"}) }
	relay := r.find("agui-relay")
	sNginx, sRelay := r.second("nginx"), r.second("agui-relay")

	gs = append(gs, r.bothWorkloads("pass-through CPU per event ≤ nginx's at saturation, on both workloads", "agui-relay", 1))

	g := "runs of 5 events ≤ 1.2× nginx's CPU per event"
	if x := against(sRelay, sNginx, runRounds, cpuPerM); len(x.Rounds) > 0 {
		m := fmt.Sprintf("%d workers × %d runs of %d deltas: ×%s", r.SecondConfig.RunWorkers, r.SecondConfig.RunsPerWorker, r.SecondConfig.RunEvents, x)
		// The floor of the relay's dependencies, when measured beside it.
		if f := against(r.second("fasthttp"), sNginx, runRounds, cpuPerM); len(f.Rounds) > 0 {
			m += fmt.Sprintf("; fasthttp's server and client alone ×%s", f)
		}
		gs = append(gs, Goal{g, m, verdict(x.Median <= 1.2)})
	} else {
		na(g, "the runs workload was not run (--workloads runs)")
	}

	g = "paced CPU per event within 5% of tcpcopy's"
	if tp, rp := r.paced(r.find("tcpcopy")), r.paced(relay); tp != nil && rp != nil && tp.CPUPerMEvents > 0 {
		x := rp.CPUPerMEvents / tp.CPUPerMEvents
		gs = append(gs, Goal{g, fmt.Sprintf("%d×%g/s: %.2f vs %.2f CPU s/M events (×%.2f)", r.Config.RefPaced, r.Config.PacedRate, rp.CPUPerMEvents, tp.CPUPerMEvents, x), verdict(x <= 1.05)})
	} else {
		na(g, "agui-relay or tcpcopy not measured paced")
	}

	gs = append(gs, r.bothWorkloads("translating (1.0→0.0.45) CPU per event ≤ 1.5× nginx's pass-through", "agui-relay 1.0→0.0.45", 1.5))

	g = "≥ 20× less CPU per event than the CopilotKit runtime's pass-through"
	if cs, rs := r.sat(r.find("copilotkit")), r.sat(r.find("agui-relay (copilotkit's runs)")); cs != nil && rs != nil && rs.CPUPerMEvents > 0 && cs.Streams == rs.Streams {
		x := cs.CPUPerMEvents / rs.CPUPerMEvents
		m := fmt.Sprintf("saturation, %d streams, the same runs: %.1f vs %.2f CPU s/M events (%.0f×)", cs.Streams, cs.CPUPerMEvents, rs.CPUPerMEvents, x)
		ok := x >= 20
		if cp, rp := r.paced(r.find("copilotkit")), r.paced(r.find("agui-relay (copilotkit's runs)")); cp != nil && rp != nil && rp.CPUPerMEvents > 0 {
			y := cp.CPUPerMEvents / rp.CPUPerMEvents
			m += fmt.Sprintf("; paced, %d streams × %g/s: %.0f×", cp.Streams, r.Config.PacedRate, y)
			ok = ok && y >= 20
		}
		gs = append(gs, Goal{g, m, verdict(ok)})
	} else {
		na(g, "copilotkit or agui-relay (copilotkit's runs) not measured")
	}

	if r.SecondConfig != nil {
		for _, rate := range r.SecondConfig.FirstRates {
			g = fmt.Sprintf("added time to first event ≤ nginx's + 100 µs at p99, %g new runs/s", rate)
			direct := r.second("direct")
			a, n := addedP99(sRelay, direct, firstRounds(rate)), addedP99(sNginx, direct, firstRounds(rate))
			if len(a.Rounds) == 0 || len(n.Rounds) == 0 {
				na(g, "not measured")
				continue
			}
			gs = append(gs, Goal{g, fmt.Sprintf("added p99 %s µs, nginx %s", signed(a), signed(n)), verdict(a.Median <= n.Median+100)})
		}
	}
	return gs
}

// bothWorkloads is the goal that name's CPU per event is at most limit
// times nginx's at saturation, on the bench's workload (its reference
// level) and on the long one (the median of the rounds' ratios).
func (r *Report) bothWorkloads(goal, name string, limit float64) Goal {
	var parts []string
	ok, measured := true, false
	if ns, cs := r.sat(r.find("nginx")), r.sat(r.find(name)); ns != nil && cs != nil {
		x := cs.CPUPerMEvents / ns.CPUPerMEvents
		parts = append(parts, fmt.Sprintf("bench's workload, %d streams: ×%.2f", r.Config.RefSat, x))
		ok, measured = ok && x <= limit, true
	}
	if x := against(r.second(name), r.second("nginx"), longRounds, cpuPerM); len(x.Rounds) > 0 {
		parts = append(parts, fmt.Sprintf("%d × %d deltas: ×%s", r.SecondConfig.LongStreams, r.SecondConfig.LongEvents, x))
		ok, measured = ok && x.Median <= limit, true
	}
	if !measured {
		return Goal{goal, name + " or nginx not measured", "n/a"}
	}
	return Goal{goal, strings.Join(parts, "; "), verdict(ok)}
}
