package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfWindow is perf attached to a proxy's processes for one window: a
// sampled profile with call graphs (perf record, into base.data, its
// output in base.log) and counts of system calls and context switches
// (perf stat).
type perfWindow struct {
	base      string
	rec, stat *perfProc
	log       *os.File
	statOut   strings.Builder
	// recCtl and statCtl, for a window started without a length, enable
	// and disable the two perf processes' events.
	recCtl, statCtl *perfControl
}

// statCalls are the system calls counted each on its own, beside all of
// them: those a proxy's event loop is made of, so that what a proxy
// spends beyond its reads and writes shows in the others.
var statCalls = []string{"read", "recvfrom", "readv", "write", "writev", "sendto", "epoll_wait", "epoll_pwait", "epoll_ctl", "futex", "nanosleep", "getsockopt", "setsockopt", "accept4", "connect", "close"}

// startPerf attaches perf to pid and its children. With secs > 0 both
// perf processes end by themselves after secs; with 0 they count from
// when startPerf returns (each has acknowledged that its events are
// enabled) until finish.
func startPerf(base string, pid int, secs float64) (w *perfWindow, err error) {
	pids := []string{fmt.Sprint(pid)}
	for _, c := range Children(pid) {
		pids = append(pids, fmt.Sprint(c))
	}
	w = &perfWindow{base: base}
	defer func() {
		if err != nil {
			w.stop()
		}
	}()
	target := func(name string, ctl **perfControl) ([]string, error) {
		t := []string{"-p", strings.Join(pids, ",")}
		if secs > 0 {
			return append(t, "--", "sleep", fmt.Sprintf("%.1f", secs)), nil
		}
		c, err := newPerfControl(base + "-" + name)
		if err != nil {
			return nil, err
		}
		*ctl = c
		return append(t, "-D", "-1", "--control", "fifo:"+c.ctlPath+","+c.ackPath), nil
	}
	t, err := target("record", &w.recCtl)
	if err != nil {
		return w, err
	}
	rec := exec.Command("perf", append([]string{"record", "-e", "cpu-clock", "-F", "1999", "-g", "-o", base + ".data"}, t...)...)
	if w.log, err = os.Create(base + ".log"); err != nil {
		return w, err
	}
	rec.Stdout, rec.Stderr = w.log, w.log
	if w.rec, err = startPerfProc(rec); err != nil {
		return w, fmt.Errorf("perf: %v", err)
	}
	events := "raw_syscalls:sys_enter,context-switches"
	for _, call := range statCalls {
		events += ",syscalls:sys_enter_" + call
	}
	if t, err = target("stat", &w.statCtl); err != nil {
		return w, err
	}
	stat := exec.Command("perf", append([]string{"stat", "-x", ",", "-e", events}, t...)...)
	stat.Stderr = &w.statOut
	w.stat, _ = startPerfProc(stat) // the counts are optional
	if secs == 0 {
		err = w.recCtl.send("enable", w.rec.done)
		if err == nil && w.stat != nil {
			err = w.statCtl.send("enable", w.stat.done)
		}
		if err != nil {
			w.stop()
			b, _ := os.ReadFile(base + ".log")
			return w, fmt.Errorf("%v: %s", err, oneLine(string(b)+" "+w.statOut.String(), 300))
		}
	}
	return w, nil
}

// stop ends the window's perf processes, if any, and removes its control
// files.
func (w *perfWindow) stop() {
	for _, p := range []*perfProc{w.rec, w.stat} {
		if p != nil {
			p.end()
		}
	}
	if w.log != nil {
		w.log.Close()
	}
	for _, c := range []*perfControl{w.recCtl, w.statCtl} {
		if c != nil {
			c.close()
		}
	}
}

// finish ends the window (for one started without a length, disabling
// its events first) and returns perf stat's counts, in its order; an
// error says why the profile was not recorded.
func (w *perfWindow) finish() ([]statCount, error) {
	end := func(p *perfProc, c *perfControl) error {
		if c == nil {
			return p.wait()
		}
		c.send("disable", p.done)
		return p.end()
	}
	recErr := end(w.rec, w.recCtl)
	var counts []statCount
	if w.stat != nil {
		end(w.stat, w.statCtl)
		counts = parsePerfStat(w.statOut.String())
	}
	w.rec, w.stat = nil, nil
	w.stop()
	if st, err := os.Stat(w.base + ".data"); err != nil || st.Size() == 0 {
		b, _ := os.ReadFile(w.base + ".log")
		return counts, fmt.Errorf("perf record: %v: %s", recErr, oneLine(string(b), 300))
	}
	return counts, nil
}

// perfProc is a running perf process, waited for in the background so
// that a command sent to it can give up when it has ended.
type perfProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // once done is closed
}

func startPerfProc(cmd *exec.Cmd) (*perfProc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &perfProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *perfProc) wait() error {
	<-p.done
	return p.err
}

// end interrupts the process, which then writes what it measured, and
// waits for it.
func (p *perfProc) end() error {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGINT)
	}
	return p.wait()
}

// perfControl is a pair of FIFOs through which a perf process started
// with its events disabled (-D -1) takes commands and acknowledges them.
type perfControl struct {
	ctlPath, ackPath string
	ctl, ack         *os.File
}

func newPerfControl(prefix string) (*perfControl, error) {
	c := &perfControl{ctlPath: prefix + ".ctl", ackPath: prefix + ".ack"}
	for _, p := range []string{c.ctlPath, c.ackPath} {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			c.close()
			return nil, fmt.Errorf("perf control: %v", err)
		}
	}
	// Read and write, so that neither open waits for perf's.
	var err error
	if c.ctl, err = os.OpenFile(c.ctlPath, os.O_RDWR, 0); err == nil {
		c.ack, err = os.OpenFile(c.ackPath, os.O_RDWR, 0)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("perf control: %v", err)
	}
	return c, nil
}

// send writes a command and waits for its acknowledgement: up to 20 s,
// or until the perf process has ended (exited is closed).
func (c *perfControl) send(cmd string, exited <-chan struct{}) error {
	if _, err := c.ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("perf control: %v", err)
	}
	limit := time.Now().Add(20 * time.Second)
	var got []byte
	buf := make([]byte, 64)
	for !strings.Contains(string(got), "ack\n") {
		c.ack.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := c.ack.Read(buf)
		got = append(got, buf[:n]...)
		if err == nil {
			continue
		}
		select {
		case <-exited:
			return fmt.Errorf("perf ended before it acknowledged %q", cmd)
		default:
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Now().After(limit) {
			return fmt.Errorf("perf did not acknowledge %q: %v", cmd, err)
		}
	}
	return nil
}

func (c *perfControl) close() {
	for _, f := range []*os.File{c.ctl, c.ack} {
		if f != nil {
			f.Close()
		}
	}
	os.Remove(c.ctlPath)
	os.Remove(c.ackPath)
}

// report is perf report's flat profile of the window (self time by
// shared object and symbol), symbols under limit percent left out.
func (w *perfWindow) report(limit float64) ([]byte, error) {
	return w.perfReport("--no-children", "-n", "--sort", "dso,symbol", "--percent-limit", fmt.Sprint(limit))
}

// cumulative is perf report's profile of the window by symbol with the
// time of what each calls (--children), symbols under limit percent left
// out.
func (w *perfWindow) cumulative(limit float64) ([]byte, error) {
	return w.perfReport("--children", "--sort", "symbol", "--percent-limit", fmt.Sprint(limit))
}

func (w *perfWindow) perfReport(args ...string) ([]byte, error) {
	rep := exec.Command("perf", append([]string{"report", "-i", w.base + ".data", "--stdio", "-g", "none"}, args...)...)
	b, err := rep.Output()
	if err != nil {
		return nil, fmt.Errorf("perf report: %v", err)
	}
	return b, nil
}

// discard removes the window's samples unless AGUIBENCH_KEEP is set.
func (w *perfWindow) discard() {
	if os.Getenv("AGUIBENCH_KEEP") == "" {
		os.Remove(w.base + ".data")
	}
}

// statCount is one of perf stat's counts: the event (a system call's
// name for its sys_enter tracepoint, "all" for raw_syscalls:sys_enter).
type statCount struct {
	Event string  `json:"event"`
	Value float64 `json:"value"`
}

// parsePerfStat reads perf stat -x , output ("value,unit,event,...");
// uncounted events are left out.
func parsePerfStat(text string) []statCount {
	var out []statCount
	for _, l := range strings.Split(text, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		ev := f[2]
		switch {
		case ev == "raw_syscalls:sys_enter":
			ev = "all"
		case strings.HasPrefix(ev, "syscalls:sys_enter_"):
			ev = strings.TrimPrefix(ev, "syscalls:sys_enter_")
		}
		out = append(out, statCount{ev, v})
	}
	return out
}

// caseSlug is a case's name as it starts its files' names.
func caseSlug(name string) string {
	return strings.NewReplacer(" ", "-", "→", "-to-").Replace(name)
}

// CPU groups of a profile's samples.
const (
	grKernel    = "kernel"
	grSched     = "runtime: scheduler"
	grGC        = "runtime: GC"
	grMalloc    = "runtime: malloc"
	grRuntime   = "runtime: other"
	grGoLib     = "Go library"
	grFastHTTP  = "fasthttp"
	grGJSON     = "gjson/sjson"
	grAdmit     = "admit/rules"
	grTranslate = "translate"
	grEvent     = "event"
	grWire      = "wire"
	grRelay     = "relay"
	grMetrics   = "metrics"
	grOther     = "other"
)

// cpuGroupOrder is the groups in the order a report shows them.
var cpuGroupOrder = []string{grKernel, grSched, grGC, grMalloc, grRuntime, grGoLib, grFastHTTP, grGJSON,
	grAdmit, grTranslate, grEvent, grWire, grRelay, grMetrics, grOther}

const mod = "github.com/agui-relay/agui-relay/"

// cpuGroups map a symbol's prefix to its group; the longest prefix that
// matches wins, kernel symbols ([k]) are the kernel's whatever their name,
// and what matches none is other (a C proxy's own code, Node's).
var cpuGroups = []struct{ prefix, group string }{
	{"runtime.", grRuntime},
	{"internal/runtime/", grRuntime},
	{"runtime/internal/", grRuntime},
	{"gcWriteBarrier", grGC},
	{"runtime.gcWriteBarrier", grGC},
	{"runtime.wbBuf", grGC},
	{"runtime.bulkBarrier", grGC},
	{"runtime.gc", grGC},
	{"runtime.(*gc", grGC},
	{"runtime.scan", grGC},
	{"runtime.greyobject", grGC},
	{"runtime.markBits", grGC},
	{"runtime.markroot", grGC},
	{"runtime.findObject", grGC},
	{"runtime.spanOf", grGC},
	{"runtime.heapBits", grGC},
	{"runtime.(*mspan).heapBits", grGC},
	{"runtime.(*mspan).sweep", grGC},
	{"runtime.(*sweepLocked)", grGC},
	{"runtime.sweepone", grGC},
	{"runtime.bgsweep", grGC},
	{"runtime.bgscavenge", grGC},
	{"runtime.(*scavenger", grGC},
	{"runtime.typePointers", grGC},
	{"runtime.(*typePointers)", grGC},
	{"runtime.tryDeferToSpanScan", grGC},
	{"runtime.(*spanInlineMarkBits)", grGC},
	{"runtime.mallocgc", grMalloc},
	{"runtime.malloc", grMalloc},
	{"runtime.nextFreeFast", grMalloc},
	{"runtime.newobject", grMalloc},
	{"runtime.makeslice", grMalloc},
	{"runtime.growslice", grMalloc},
	{"runtime.makemap", grMalloc},
	{"runtime.rawstring", grMalloc},
	{"runtime.rawbyteslice", grMalloc},
	{"runtime.slicebytetostring", grMalloc},
	{"runtime.concatstring", grMalloc},
	{"runtime.memclrNoHeapPointers", grMalloc},
	{"runtime.deductAssistCredit", grMalloc},
	{"runtime.(*mcache)", grMalloc},
	{"runtime.(*mcentral)", grMalloc},
	{"runtime.(*mheap)", grMalloc},
	{"runtime.(*mspan)", grMalloc},
	{"runtime.(*pageAlloc)", grMalloc},
	{"runtime.schedule", grSched},
	{"runtime.findRunnable", grSched},
	{"runtime.park_m", grSched},
	{"runtime.mcall", grSched},
	{"runtime.gopark", grSched},
	{"runtime.goready", grSched},
	{"runtime.ready", grSched},
	{"runtime.runq", grSched},
	{"runtime.globrunq", grSched},
	{"runtime.netpoll", grSched},
	{"runtime.stealWork", grSched},
	{"runtime.note", grSched},
	{"runtime.futex", grSched},
	{"runtime.lock", grSched},
	{"runtime.unlock", grSched},
	{"runtime.checkTimers", grSched},
	{"runtime.(*timer", grSched},
	{"runtime.execute", grSched},
	{"runtime.gogo", grSched},
	{"runtime.casgstatus", grSched},
	{"runtime.wakep", grSched},
	{"runtime.startm", grSched},
	{"runtime.stopm", grSched},
	{"runtime.mPark", grSched},
	{"runtime.resetspinning", grSched},
	{"runtime.gosched", grSched},
	{"runtime.goschedImpl", grSched},
	{"runtime.entersyscall", grSched},
	{"runtime.reentersyscall", grSched},
	{"runtime.exitsyscall", grSched},
	{"runtime.sysmon", grSched},
	{"runtime.usleep", grSched},
	{"runtime.osyield", grSched},
	{"runtime.procyield", grSched},
	{"runtime.handoffp", grSched},
	{"runtime.acquirep", grSched},
	{"runtime.releasep", grSched},
	{"runtime.retake", grSched},
	{"runtime.injectglist", grSched},
	{"runtime.newproc", grSched},
	{"runtime.goexit", grSched},
	{"runtime.gfget", grSched},
	{"runtime.gfput", grSched},
	{"runtime.chansend", grSched},
	{"runtime.chanrecv", grSched},
	{"runtime.selectgo", grSched},
	{"runtime.semacquire", grSched},
	{"runtime.semrelease", grSched},
	{"bytes.", grGoLib},
	{"strings.", grGoLib},
	{"strconv.", grGoLib},
	{"sync.", grGoLib},
	{"sync/", grGoLib},
	{"internal/", grGoLib},
	{"syscall.", grGoLib},
	{"time.", grGoLib},
	{"net.", grGoLib},
	{"net/", grGoLib},
	{"os.", grGoLib},
	{"io.", grGoLib},
	{"bufio.", grGoLib},
	{"unicode", grGoLib},
	{"indexbytebody", grGoLib},
	{"memeqbody", grGoLib},
	{"cmpbody", grGoLib},
	{"countbody", grGoLib},
	{"math", grGoLib},
	{"sort.", grGoLib},
	{"slices.", grGoLib},
	{"encoding/", grGoLib},
	{"context.", grGoLib},
	{"github.com/valyala/", grFastHTTP},
	{"github.com/tidwall/", grGJSON},
	{mod + "rules.", grAdmit},
	{mod + "negotiate.", grAdmit},
	{mod + "relay.(*Relay).admit", grAdmit},
	{mod + "relay.JudgeInput", grAdmit},
	{mod + "relay.inputErrors", grAdmit},
	{mod + "translate.", grTranslate},
	{mod + "event.", grEvent},
	{mod + "internal/wire.", grWire},
	{mod + "wire.", grWire}, // recordings from before wire moved under internal/
	{mod + "relay.", grRelay},
	{mod + "metrics.", grMetrics},
	{"github.com/prometheus/", grMetrics},
}

// cpuGroup is the group of a sample's symbol.
func cpuGroup(kernel bool, sym string) string {
	if kernel {
		return grKernel
	}
	best, group := -1, grOther
	for _, g := range cpuGroups {
		if len(g.prefix) > best && strings.HasPrefix(sym, g.prefix) {
			best, group = len(g.prefix), g.group
		}
	}
	return group
}

// cpuSplit groups a flat profile (perf report --no-children -n --sort
// dso,symbol output: "  12.34%  123  dso  [.] symbol", the count of
// samples optional) into the percent of the samples each group took, the
// percent it read in all and the samples it counted.
func cpuSplit(report string) (split map[string]float64, all float64, samples int64) {
	split = map[string]float64{}
	for _, l := range strings.Split(report, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasSuffix(f[0], "%") || strings.HasPrefix(f[0], "#") {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		// The symbol follows its kind ([k], [.], ...), after the object.
		k := -1
		for i := 1; i < len(f); i++ {
			if len(f[i]) == 3 && f[i][0] == '[' && f[i][2] == ']' {
				k = i
				break
			}
		}
		if k < 0 || k+1 >= len(f) {
			continue
		}
		kernel := f[k] == "[k]" || f[1] == "[kernel.kallsyms]"
		split[cpuGroup(kernel, strings.Join(f[k+1:], " "))] += pct
		all += pct
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			samples += n
		}
	}
	return split, all, samples
}

// WorkloadProfile is one window of a second workload under perf, after
// its measured rounds: what the proxy did per run (runs) or per event
// (long).
type WorkloadProfile struct {
	Workload string `json:"workload"`
	Per      string `json:"per"` // "run" or "event"
	Units    int64  `json:"units"`
	// CPUPerUnitUS is the proxy's CPU per unit in the window (µs), with
	// perf attached.
	CPUPerUnitUS float64 `json:"proxy_cpu_us_per_unit"`
	// Syscalls are system calls per unit, by call ("all" first);
	// ContextSwitches per unit.
	Syscalls        []statCount `json:"syscalls_per_unit,omitempty"`
	ContextSwitches float64     `json:"context_switches_per_unit"`
	// CPU is the percent of the proxy's samples in each group
	// (cpuGroups).
	CPU     map[string]float64 `json:"cpu_percent,omitempty"`
	Samples int64              `json:"cpu_samples,omitempty"`
	Files   string             `json:"files,omitempty"`
	Error   string             `json:"error,omitempty"`
}

// profileWorkload runs one more load of a second workload (load) with
// perf attached to the proxy, saving <case>-<workload>.txt (the flat
// profile with the counts above it) and .log into OutDir/profiles.
func profileWorkload(cfg Config, c Case, p *Proc, workload string, load func() RoundResult) WorkloadProfile {
	wp := WorkloadProfile{Workload: workload, Per: "event"}
	if workload == WorkloadRuns {
		wp.Per = "run"
	}
	dir := filepath.Join(cfg.OutDir, "profiles")
	os.MkdirAll(dir, 0o755)
	base := filepath.Join(dir, caseSlug(c.Name)+"-"+workload)
	w, err := startPerf(base, p.Pid, 0)
	if err != nil {
		wp.Error = err.Error()
		return wp
	}
	r := load()
	counts, err := w.finish()
	defer w.discard()
	wp.Units = r.Events
	if wp.Per == "run" {
		wp.Units = r.Runs
	}
	if wp.Units > 0 {
		wp.CPUPerUnitUS = r.CPUSeconds / float64(wp.Units) * 1e6
	}
	var head strings.Builder
	fmt.Fprintf(&head, "# %s, %s workload under perf: %d %ss, %.0f events/s, proxy CPU %.2f µs per %s\n", c.Name, workload, wp.Units, wp.Per, r.EventsPerSec, wp.CPUPerUnitUS, wp.Per)
	for _, sc := range counts {
		per := 0.0
		if wp.Units > 0 {
			per = sc.Value / float64(wp.Units)
		}
		fmt.Fprintf(&head, "# %s: %.0f (%.3f per %s)\n", sc.Event, sc.Value, per, wp.Per)
		if sc.Event == "context-switches" {
			wp.ContextSwitches = per
		} else {
			wp.Syscalls = append(wp.Syscalls, statCount{sc.Event, per})
		}
	}
	if !r.complete() {
		wp.Error = fmt.Sprintf("%d of %d runs complete under perf: %s", r.RunsOK, r.RunsOK+r.RunsBad+r.RunsFailed, r.FirstError)
	}
	if err != nil {
		wp.Error = err.Error()
		os.WriteFile(base+".txt", []byte(head.String()), 0o644)
		cfg.logf("   profile %s %s: %v", c.Name, workload, err)
		return wp
	}
	full, err := w.report(0)
	if err != nil {
		wp.Error = err.Error()
		return wp
	}
	split, all, samples := cpuSplit(string(full))
	if all > 0 {
		wp.CPU, wp.Samples = split, samples
	}
	fmt.Fprintf(&head, "# CPU by group (%% of samples):")
	for _, g := range cpuGroupOrder {
		if split[g] > 0 {
			fmt.Fprintf(&head, " %s %.1f;", g, split[g])
		}
	}
	head.WriteString("\n")
	// The file keeps the symbols over 0.2%.
	top, _ := w.report(0.2)
	os.WriteFile(base+".txt", append([]byte(head.String()), top...), 0o644)
	// What each symbol's calls take with it, over 1%.
	if b, err := w.cumulative(1); err == nil {
		os.WriteFile(base+"-children.txt", b, 0o644)
	}
	wp.Files = base + ".*"
	cfg.logf("   profile %s %s: %s.txt", c.Name, workload, base)
	return wp
}

// syscallsByCall prints the calls per unit over 0.05, most first, and
// what the others add to all.
func syscallsByCall(cs []statCount) (all string, by string) {
	var total, named float64
	var calls []statCount
	for _, c := range cs {
		if c.Event == "all" {
			total = c.Value
		}
	}
	for _, c := range cs {
		if c.Event != "all" && c.Value > 0 && c.Value >= total/100 {
			calls = append(calls, c)
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Value > calls[j].Value })
	var parts []string
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf("%s %s", c.Event, fmtPer(c.Value)))
		named += c.Value
	}
	if rest := total - named; rest > 0 && rest >= total/100 {
		parts = append(parts, "others "+fmtPer(rest))
	}
	return fmtPer(total), strings.Join(parts, ", ")
}

func fmtPer(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
