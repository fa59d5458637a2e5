package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agui-relay/agui-relay/internal/plot"
)

// find returns the named case, nil when absent or not measured.
func (r *Report) find(name string) *CaseResult {
	for i := range r.Cases {
		if r.Cases[i].Name == name && r.Cases[i].Skipped == "" && r.Cases[i].Error == "" {
			return &r.Cases[i]
		}
	}
	return nil
}

func phaseAt(ps []PhaseResult, streams int) *PhaseResult {
	for i := range ps {
		if ps[i].Streams == streams {
			return &ps[i]
		}
	}
	return nil
}

// sat and paced return a case's phase at the reference stream count, or,
// for a case whose levels stop below it (a slow proxy's), at its highest.
func (r *Report) sat(c *CaseResult) *PhaseResult {
	if c == nil {
		return nil
	}
	return refPhase(c.Sat, r.Config.RefSat)
}

func (r *Report) paced(c *CaseResult) *PhaseResult {
	if c == nil {
		return nil
	}
	return refPhase(c.Paced, r.Config.RefPaced)
}

func refPhase(ps []PhaseResult, ref int) *PhaseResult {
	if p := phaseAt(ps, ref); p != nil {
		return p
	}
	var best *PhaseResult
	for i := range ps {
		if ps[i].Streams < ref && (best == nil || ps[i].Streams > best.Streams) {
			best = &ps[i]
		}
	}
	return best
}

// Problems lists every incomplete run: the one thing quick mode checks.
func (r *Report) Problems() []string {
	var out []string
	for _, c := range r.Cases {
		if c.Skipped != "" {
			continue
		}
		if c.Error != "" {
			out = append(out, c.Name+": "+c.Error)
			continue
		}
		for _, p := range append(append([]PhaseResult{}, c.Sat...), c.Paced...) {
			if p.RunsBad > 0 || p.RunsFailed > 0 {
				out = append(out, fmt.Sprintf("%s, %d streams: %d incomplete, %d failed runs: %s", c.Name, p.Streams, p.RunsBad, p.RunsFailed, p.FirstError))
			}
			if p.RunsOK == 0 && p.Rate == 0 {
				out = append(out, fmt.Sprintf("%s, %d streams: no run completed", c.Name, p.Streams))
			}
			if p.Events == 0 {
				out = append(out, fmt.Sprintf("%s, %d streams: no events", c.Name, p.Streams))
			}
		}
		for _, i := range c.Idle {
			if i.FirstError != "" || i.Finished != i.Streams {
				out = append(out, fmt.Sprintf("%s, %d idle streams: opened %d, finished %d: %s", c.Name, i.Streams, i.Opened, i.Finished, i.FirstError))
			}
		}
	}
	return append(out, r.secondProblems()...)
}

// Goal is one of issue #6's targets and what this run measured for it.
type Goal struct {
	Goal     string
	Measured string
	Met      string // "met", "missed", "n/a"
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// Goals evaluates issue #6's goals against this run.
func (r *Report) Goals() []Goal {
	var gs []Goal
	nginx := r.find("nginx")
	relay := r.find("agui-relay")
	na := func(goal, why string) { gs = append(gs, Goal{goal, why, "n/a"}) }

	g := "pass-through CPU per event ≤ nginx's"
	if ns, rs := r.sat(nginx), r.sat(relay); ns != nil && rs != nil {
		np, rp := r.paced(nginx), r.paced(relay)
		m := fmt.Sprintf("saturation %d streams: %.2f vs %.2f CPU s/M events (×%.2f)", r.Config.RefSat, rs.CPUPerMEvents, ns.CPUPerMEvents, rs.CPUPerMEvents/ns.CPUPerMEvents)
		ok := rs.CPUPerMEvents <= ns.CPUPerMEvents
		if np != nil && rp != nil {
			m += fmt.Sprintf("; paced %d×%g/s: %.2f vs %.2f (×%.2f)", r.Config.RefPaced, r.Config.PacedRate, rp.CPUPerMEvents, np.CPUPerMEvents, rp.CPUPerMEvents/np.CPUPerMEvents)
			ok = ok && rp.CPUPerMEvents <= np.CPUPerMEvents
		}
		gs = append(gs, Goal{g, m, verdict(ok)})
	} else {
		na(g, "agui-relay or nginx not measured")
	}

	g = "pass-through throughput ≥ nginx's"
	if ns, rs := r.sat(nginx), r.sat(relay); ns != nil && rs != nil {
		m := fmt.Sprintf("%d streams: %.0f vs %.0f events/s (×%.2f)", r.Config.RefSat, rs.EventsPerSec, ns.EventsPerSec, rs.EventsPerSec/ns.EventsPerSec)
		ok := rs.EventsPerSec >= ns.EventsPerSec
		for _, p := range relay.Sat {
			if q := phaseAt(nginx.Sat, p.Streams); q != nil && p.Streams != r.Config.RefSat {
				m += fmt.Sprintf("; %d: ×%.2f", p.Streams, p.EventsPerSec/q.EventsPerSec)
			}
		}
		gs = append(gs, Goal{g, m, verdict(ok)})
	} else {
		na(g, "agui-relay or nginx not measured")
	}

	for _, tc := range []struct{ relay, naive string }{
		{"agui-relay 1.0→0.0.45", "naive 1.0→0.0.45"},
		{"agui-relay legacy→1.0", "naive legacy→1.0"},
		{"agui-relay thinking→1.0", "naive thinking→1.0"},
	} {
		g = tc.relay + ": CPU per event ≤ 2× nginx pass-through"
		rc := r.find(tc.relay)
		if ns, rs := r.sat(nginx), r.sat(rc); ns != nil && rs != nil {
			gs = append(gs, Goal{g, fmt.Sprintf("%.2f vs %.2f CPU s/M events (×%.2f of nginx)", rs.CPUPerMEvents, ns.CPUPerMEvents, rs.CPUPerMEvents/ns.CPUPerMEvents),
				verdict(rs.CPUPerMEvents <= 2*ns.CPUPerMEvents)})
		} else {
			na(g, "not measured")
		}
		g = tc.relay + ": ≥10× cheaper per event than decode-everything"
		if nv, rs := r.sat(r.find(tc.naive)), r.sat(rc); nv != nil && rs != nil {
			ratio := nv.CPUPerMEvents / rs.CPUPerMEvents
			gs = append(gs, Goal{g, fmt.Sprintf("naive %.2f vs %.2f CPU s/M events: %.1f× cheaper", nv.CPUPerMEvents, rs.CPUPerMEvents, ratio), verdict(ratio >= 10)})
		} else {
			na(g, "not measured")
		}
	}

	for _, name := range []string{"agui-relay", "agui-relay 1.0→0.0.45", "agui-relay legacy→1.0"} {
		g = name + ": added p99 < 1 ms at the paced load"
		c := r.find(name)
		if c == nil {
			na(g, "not measured")
			continue
		}
		p, base := r.paced(c), r.paced(r.find(c.Case.Baseline))
		if p == nil || base == nil {
			na(g, "not measured")
			continue
		}
		add := p.P99 - base.P99
		m := fmt.Sprintf("%d×%g/s: p99 %.0f µs vs direct %.0f µs: +%.0f µs%s", r.Config.RefPaced, r.Config.PacedRate, p.P99, base.P99, add, ownPart(p))
		var in []string
		for _, cp := range c.Captures {
			if !cp.measured() {
				continue
			}
			part := fmt.Sprintf("%.0f µs at %d streams", cp.P99, cp.Streams)
			if np := nginx.captured(cp.Streams); np != nil {
				part += fmt.Sprintf(" (nginx %.0f)", np.P99)
			}
			in = append(in, part)
		}
		if len(in) > 0 {
			m += "; in the proxy (packet capture) p99 " + strings.Join(in, ", ")
		}
		gs = append(gs, Goal{g, m, verdict(add < 1000)})
	}

	for _, name := range []string{"agui-relay", "agui-relay 1.0→0.0.45", "agui-relay legacy→1.0"} {
		g = name + ": < 20 KiB per idle open stream"
		c := r.find(name)
		if c == nil || len(c.Idle) == 0 {
			na(g, "not measured")
			continue
		}
		var parts []string
		ok := true
		for _, i := range c.Idle {
			parts = append(parts, fmt.Sprintf("%d: %.1f KiB", i.Streams, i.KiBPerStream))
			ok = ok && i.FirstError == "" && i.KiBPerStream < 20
		}
		gs = append(gs, Goal{g, strings.Join(parts, ", "), verdict(ok)})
	}
	return gs
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func num(v float64, prec int) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// Markdown renders the report.
func (r *Report) Markdown(command string) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w("# agui-relay benchmark (%s mode)\n\n", r.Mode)
	w("Command: `%s`  \n", command)
	w("Taken %s, %.0f s. Machine: %s, %d cores, %.0f GiB, Linux %s, %s; load average at start %.2f.  \n",
		r.Started.Format("2006-01-02 15:04 MST"), r.Seconds, r.Machine.CPU, r.Machine.Cores, r.Machine.MemGiB, r.Machine.Kernel, r.Machine.Go, r.Machine.LoadAvg0)
	w("agui-relay at `%s`; nginx %s (1 worker, proxy_buffering off)", r.Versions.Relay, r.Versions.Nginx)
	if v := r.Versions; v.HAProxy != "" || v.Caddy != "" || v.CopilotKit != "" {
		w("; %s (1 thread); Caddy %s (flush_interval -1); @copilotkit/runtime %s (in-memory runner, one HttpAgent)", v.HAProxy, v.Caddy, v.CopilotKit)
	}
	w(".  \n")
	if r.Config.Pinned != "" {
		w("Pinned: %s.  \n", r.Config.Pinned)
	} else {
		w("Producer, load generator and proxy share the machine's cores (not pinned). ")
	}
	w("Figures vary from machine to machine; compare the ratios of one run.\n\n")
	if r.Mode == "quick" {
		w("**Quick mode checks completeness only; its figures are too short to compare.**\n\n")
	}
	if ps := r.Problems(); len(ps) > 0 {
		w("## Incomplete streams\n\n")
		for _, p := range ps {
			w("- %s\n", p)
		}
		w("\n")
	}
	nginx := r.find("nginx")
	ns, np := r.sat(nginx), r.paced(nginx)
	w("## Summary\n\n")
	w("Saturation: %d streams, producer as fast as it can (%d-byte writes), %d events per run. Paced: %d streams × %g events/s, %d events per run (latency is send stamp → consumer read, end to end). CPU is the proxy's processes alone (user+system from /proc), per million events delivered. Ratios below 1 in the CPU columns mean cheaper than nginx.\n\n",
		r.Config.RefSat, r.Config.FlushBytes, r.Config.SatEvents, r.Config.RefPaced, r.Config.PacedRate, r.Config.PacedEvents)
	w("| case | events/s | × nginx | × direct | MB/s | CPU s/M ev (sat.) | × nginx | CPU s/M ev (paced) | × nginx | p50 / p99 / p999 µs (paced) | added p99 µs | peak RSS MiB | KiB per idle stream (")
	var lv []string
	for _, n := range r.Config.IdleLevels {
		lv = append(lv, fmt.Sprint(n))
	}
	w("%s) | runs complete |\n", strings.Join(lv, " / "))
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|\n")
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Skipped != "" || c.Error != "" {
			why := c.Skipped
			if why == "" {
				why = c.Error
			}
			w("| %s | skipped: %s |||||||||||||\n", c.Name, oneLine(why, 160))
			continue
		}
		s, p := r.sat(c), r.paced(c)
		base := r.find(c.Case.Baseline)
		bs, bp := r.sat(base), r.paced(base)
		cell := func(p *PhaseResult, f func(*PhaseResult) string) string {
			if p == nil {
				return "–"
			}
			return f(p)
		}
		eps := func(p *PhaseResult) float64 {
			if p == nil {
				return 0
			}
			return p.EventsPerSec
		}
		cpu := func(p *PhaseResult) float64 {
			if p == nil {
				return 0
			}
			return p.CPUPerMEvents
		}
		vsDirect := "–"
		if bs != nil && s != nil {
			vsDirect = ratio(s.EventsPerSec, bs.EventsPerSec)
		}
		added := "–"
		if bp != nil && p != nil {
			added = fmt.Sprintf("%+.0f", p.P99-bp.P99)
		}
		var idle []string
		for _, n := range r.Config.IdleLevels {
			v := "–"
			for _, i := range c.Idle {
				if i.Streams == n {
					v = fmt.Sprintf("%.1f", i.KiBPerStream)
					if i.FirstError != "" {
						v += "!"
					}
				}
			}
			idle = append(idle, v)
		}
		if c.Proxy == ProxyNone {
			idle = nil
		}
		okRuns, badRuns := int64(0), int64(0)
		for _, ph := range append(append([]PhaseResult{}, c.Sat...), c.Paced...) {
			okRuns += ph.RunsOK
			badRuns += ph.RunsBad + ph.RunsFailed
		}
		complete := fmt.Sprintf("%d", okRuns)
		if badRuns > 0 {
			complete = fmt.Sprintf("**%d of %d**", okRuns, okRuns+badRuns)
		}
		peak := "–"
		if c.PeakRSSKiB > 0 {
			peak = fmt.Sprintf("%.1f", float64(c.PeakRSSKiB)/1024)
		}
		at := func(p *PhaseResult, ref int) string {
			if p == nil || p.Streams == ref {
				return ""
			}
			return fmt.Sprintf(" (%d streams)", p.Streams)
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Name,
			cell(s, func(p *PhaseResult) string { return fmt.Sprintf("%.0f%s", p.EventsPerSec, at(p, r.Config.RefSat)) }),
			ratio(eps(s), eps(ns)), vsDirect,
			cell(s, func(p *PhaseResult) string { return fmt.Sprintf("%.1f", p.BytesPerSec/1e6) }),
			num(cpu(s), 2), ratio(cpu(s), cpu(ns)),
			num(cpu(p), 2), ratio(cpu(p), cpu(np)),
			cell(p, func(p *PhaseResult) string {
				return fmt.Sprintf("%.0f / %.0f / %.0f%s", p.P50, p.P99, p.P999, at(p, r.Config.RefPaced))
			}),
			added, peak, strings.Join(idle, " / "), complete)
	}
	w("\n## Goals (issue #6)\n\n| goal | measured | |\n|---|---|---|\n")
	for _, g := range r.Goals() {
		w("| %s | %s | %s |\n", g.Goal, g.Measured, g.Met)
	}
	w("\n## Goals (issue #23)\n\nMedians over the rounds of the workloads beside the bench's own (below), each round's in brackets.\n\n| goal | measured | |\n|---|---|---|\n")
	for _, g := range r.Goals23() {
		w("| %s | %s | %s |\n", g.Goal, g.Measured, g.Met)
	}
	r.secondSection(w)

	w("\n## Throughput against concurrency (saturation)\n\n![throughput](throughput.svg)\n\n")
	levelTable(w, r.Cases, r.Config.SatLevels, " %d streams ev/s | CPU s/M ev |", "---:|---:|",
		func(c *CaseResult) []PhaseResult { return c.Sat },
		func(p *PhaseResult) string {
			return fmt.Sprintf(" %.0f | %s |", p.EventsPerSec, num(p.CPUPerMEvents, 2))
		})
	w("\nThe load generator and producer (one process) used, per second of these windows: ")
	var parts []string
	for i := range r.Cases {
		if p := r.sat(&r.Cases[i]); p != nil && p.Seconds > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", r.Cases[i].Name, p.BenchCPU/p.Seconds))
		}
	}
	w("%s CPU seconds at %d streams; the proxy and they share %d cores.\n", strings.Join(parts, ", "), r.Config.RefSat, r.Machine.Cores)
	w("\n## p99 latency against concurrency (paced, %g events/s per stream)\n\n![p99 latency](p99.svg)\n\n", r.Config.PacedRate)
	levelTable(w, r.Cases, r.Config.PacedLevels, " %d streams p50 / p99 / p999 µs | CPU s/M ev |", "---|---:|",
		func(c *CaseResult) []PhaseResult { return c.Paced },
		func(p *PhaseResult) string {
			return fmt.Sprintf(" %.0f / %.0f / %.0f | %s |", p.P50, p.P99, p.P999, num(p.CPUPerMEvents, 2))
		})
	var own []string
	for i := range r.Cases {
		for _, p := range r.Cases[i].Paced {
			if p.OwnLatencyN > 0 {
				own = append(own, fmt.Sprintf("%s at %d streams: p50 %s, p99 %s (%d events)", r.Cases[i].Name, p.Streams, ownBound(p.OwnP50), ownBound(p.OwnP99), p.OwnLatencyN))
			}
		}
	}
	if len(own) > 0 {
		w("\nagui-relay's own part of the latency, from the read that completed an event to the flush that wrote it (its metric `%s`, one read in eight; upper bounds of the bucket holding each quantile; the wait for a CPU before the read is not in it): %s.\n", relayLatencyMetric, strings.Join(own, "; "))
	}
	r.captureSection(w)
	w("\n## Idle streams\n\n")
	if r.Config.IdleNote != "" {
		w("%s.\n\n", r.Config.IdleNote)
	}
	w("| case | streams | opened | RSS before → after KiB | KiB per stream | threads | open time s |\n|---|---:|---:|---|---:|---:|---:|\n")
	for i := range r.Cases {
		c := &r.Cases[i]
		for _, id := range c.Idle {
			w("| %s | %d | %d | %d → %d | %.1f | %d | %.1f |\n", c.Name, id.Streams, id.Opened, id.BaseRSSKiB, id.LoadedRSSKiB, id.KiBPerStream, id.ProxyThreads, id.OpenSeconds)
		}
	}
	w("\nRaw figures: [results.json](results.json).\n")
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// levelTable writes, through w, a table with a row for each case that has
// phases and two columns for each of levels: head (given the level) heads
// them, align is their separator row, cells gives a phase's two cells.
func levelTable(w func(string, ...any), cases []CaseResult, levels []int, head, align string,
	phases func(*CaseResult) []PhaseResult, cells func(*PhaseResult) string) {
	w("| case |")
	for _, n := range levels {
		w(head, n)
	}
	w("\n|---|")
	for range levels {
		w("%s", align)
	}
	w("\n")
	for i := range cases {
		c := &cases[i]
		ps := phases(c)
		if len(ps) == 0 {
			continue
		}
		w("| %s |", c.Name)
		for _, n := range levels {
			if p := phaseAt(ps, n); p != nil {
				w("%s", cells(p))
			} else {
				w(" – | – |")
			}
		}
		w("\n")
	}
}

// Plots returns the throughput and p99 plots.
func (r *Report) Plots() (throughput, p99 plot.Plot) {
	throughput = plot.Plot{Title: "Throughput at saturation", XLabel: "concurrent streams", YLabel: "events/s delivered", LogX: true}
	p99 = plot.Plot{Title: fmt.Sprintf("p99 latency, %g events/s per stream", r.Config.PacedRate), XLabel: "concurrent streams", YLabel: "p99 latency (µs)", LogX: true, LogY: true}
	for _, c := range r.Cases {
		if len(c.Sat) > 0 {
			s := plot.Series{Name: c.Name}
			for _, p := range c.Sat {
				s.Points = append(s.Points, plot.Point{X: float64(p.Streams), Y: p.EventsPerSec})
			}
			throughput.Series = append(throughput.Series, s)
		}
		if len(c.Paced) > 0 {
			s := plot.Series{Name: c.Name}
			for _, p := range c.Paced {
				s.Points = append(s.Points, plot.Point{X: float64(p.Streams), Y: p.P99})
			}
			p99.Series = append(p99.Series, s)
		}
	}
	return throughput, p99
}

// LoadReport reads a report written by Write (its results.json).
func LoadReport(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	for i := range r.Cases {
		for _, sp := range specs() {
			if sp.Name == r.Cases[i].Name {
				r.Cases[i].Case = sp.Case
			}
		}
	}
	return &r, nil
}

// Write writes report.md, results.json and the two SVG plots into dir.
func (r *Report) Write(dir, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.Command = command
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tp, lp := r.Plots()
	files := map[string]string{
		"report.md":      r.Markdown(command),
		"results.json":   string(js) + "\n",
		"throughput.svg": tp.SVG(),
		"p99.svg":        lp.SVG(),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ownPart says agui-relay's own latency at a paced level, when measured.
func ownPart(p *PhaseResult) string {
	if p.OwnLatencyN == 0 {
		return ""
	}
	return fmt.Sprintf("; the relay's own part, read to flush: p99 %s", ownBound(p.OwnP99))
}

// ownBound prints the upper bound of an own-latency quantile, in µs.
func ownBound(us float64) string {
	if us < 0 {
		return "> 1 s"
	}
	return "≤ " + strconv.FormatFloat(math.Round(us), 'f', -1, 64) + " µs"
}

func (c *CaptureResult) measured() bool { return c.Error == "" && c.Matched > 0 }

// captured is the case's packet-capture window at streams, when it
// measured anything.
func (c *CaseResult) captured(streams int) *CaptureResult {
	if c == nil {
		return nil
	}
	for i := range c.Captures {
		if cp := &c.Captures[i]; cp.Streams == streams && cp.measured() {
			return cp
		}
	}
	return nil
}

// captureSection writes the time events spent in each proxy (Capture).
func (r *Report) captureSection(w func(string, ...any)) {
	captured := false
	for i := range r.Cases {
		captured = captured || len(r.Cases[i].Captures) > 0
	}
	if !captured {
		if r.Config.CaptureNote != "" {
			w("\n%s.\n", r.Config.CaptureNote)
		}
		return
	}
	w("\n## Time in the proxy (packet capture, %g events/s per stream)\n\n", r.Config.PacedRate)
	w("The paced loads up to the reference once more, with tcpdump capturing on loopback the segments the producer and the proxy send: an event's time in the proxy runs from the capture of the producer's segment that carried it to the capture of the proxy's segment that carried it on, matched by its stamp. Unlike the end-to-end latency, it leaves out the load generator's own wait for a CPU. The capture itself takes CPU from the machine the three share.\n\n")
	w("| case | streams | p50 / p99 / p999 µs in the proxy | max µs | × nginx p99 | events matched | unmatched in / out | dropped by the kernel | end-to-end p50 / p99 µs (same window) |\n|---|---:|---|---:|---:|---:|---|---:|---|\n")
	for _, c := range r.Cases {
		for _, cp := range c.Captures {
			if cp.Error != "" {
				w("| %s | %d | failed: %s |||||||\n", c.Name, cp.Streams, oneLine(cp.Error, 160))
				continue
			}
			x := "–"
			if np := r.find("nginx").captured(cp.Streams); np != nil {
				x = ratio(cp.P99, np.P99)
			}
			w("| %s | %d | %.0f / %.0f / %.0f | %.0f | %s | %d | %d / %d | %d | %.0f / %.0f |\n", c.Name, cp.Streams, cp.P50, cp.P99, cp.P999, cp.Max, x,
				cp.Matched, cp.UnmatchedIn, cp.UnmatchedOut, cp.Dropped, cp.Phase.P50, cp.Phase.P99)
		}
	}
}
