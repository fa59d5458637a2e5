package harness

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// A flat profile as perf report --no-children --sort dso,symbol writes it.
const cannedReport = `# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 1K of event 'cpu-clock'
# Event count (approx.): 987493500
#
# Overhead  Shared Object      Symbol                                IPC   [IPC Coverage]
# ........  .................  ....................................  ....................
#
    30.00%   600  [kernel.kallsyms]  [k] finish_task_switch.isra.0         -      -
    10.00%   100  [kernel.kallsyms]  [k] runtime.looks_like_go_but_kernel  -      -
     5.00%  agui-relay         [.] runtime.mallocgc                  -      -
     4.00%  agui-relay         [.] runtime.findRunnable              -      -
     3.00%  agui-relay         [.] runtime.scanObject                -      -
     2.00%  agui-relay         [.] runtime.memmove                   -      -
     1.50%  agui-relay         [.] gcWriteBarrier                    -      -
     6.00%  agui-relay         [.] github.com/valyala/fasthttp.(*ResponseHeader).Read  -  -
     2.00%  agui-relay         [.] github.com/tidwall/gjson.parseObject  -  -
     3.00%  agui-relay         [.] github.com/agui-relay/agui-relay/relay.(*Relay).admit  -  -
     2.00%  agui-relay         [.] github.com/agui-relay/agui-relay/rules.ReadInput  -  -
     1.00%  agui-relay         [.] github.com/agui-relay/agui-relay/negotiate.Parse  -  -
     4.00%  agui-relay         [.] github.com/agui-relay/agui-relay/relay.(*Relay).serve  -  -
     2.50%  agui-relay         [.] github.com/agui-relay/agui-relay/translate.(*Chain).Apply  -  -
     2.00%  agui-relay         [.] github.com/agui-relay/agui-relay/event.(*Scanner).Next  -  -
     1.00%  agui-relay         [.] github.com/agui-relay/agui-relay/wire.(*Conn).Read  -  -
     1.00%  agui-relay         [.] github.com/agui-relay/agui-relay/metrics.(*metricsTap).End  -  -
     1.00%  agui-relay         [.] github.com/prometheus/client_golang/prometheus.(*counter).Add  -  -
     2.00%  agui-relay         [.] internal/poll.runtime_pollSetDeadline  -  -
     1.00%  agui-relay         [.] indexbytebody                     -      -
     8.00%  nginx              [.] ngx_http_parse_header_line        -      -
     8.00%  [vdso]             [.] __vdso_clock_gettime              -      -
#
# (Tip: some hint)
`

// The samples are grouped by the longest matching prefix, kernel symbols
// whatever their name, and the groups add up to what was read.
func TestCPUSplit(t *testing.T) {
	split, all, samples := cpuSplit(cannedReport)
	want := map[string]float64{
		grKernel: 40, grMalloc: 5, grSched: 4, grGC: 4.5, grRuntime: 2, grFastHTTP: 6, grGJSON: 2,
		grAdmit: 6, grRelay: 4, grTranslate: 2.5, grEvent: 2, grWire: 1, grMetrics: 2, grGoLib: 3, grOther: 16,
	}
	for g, v := range want {
		if math.Abs(split[g]-v) > 1e-9 {
			t.Errorf("%s: %.2f%%, want %.2f%%", g, split[g], v)
		}
	}
	var sum float64
	for g, v := range split {
		if _, ok := want[g]; !ok {
			t.Errorf("unexpected group %q (%.2f%%)", g, v)
		}
		sum += v
	}
	if math.Abs(all-100) > 1e-9 || math.Abs(sum-all) > 1e-9 {
		t.Errorf("read %.2f%%, grouped %.2f%%, want 100", all, sum)
	}
	// The samples' counts (-n) are summed where the report has them.
	if samples != 700 {
		t.Errorf("%d samples, want 700", samples)
	}
}

// Every prefix names a group the report shows, once.
func TestCPUGroupsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range cpuGroups {
		if seen[g.prefix] {
			t.Errorf("prefix %q twice", g.prefix)
		}
		seen[g.prefix] = true
		if !slices.Contains(cpuGroupOrder, g.group) || g.group == grKernel || g.group == grOther {
			t.Errorf("prefix %q: group %q", g.prefix, g.group)
		}
	}
	for _, g := range cpuGroupOrder {
		if g == grKernel || g == grOther {
			continue
		}
		found := false
		for _, c := range cpuGroups {
			found = found || c.group == g
		}
		if !found {
			t.Errorf("no prefix leads to %q", g)
		}
	}
}

func TestParsePerfStat(t *testing.T) {
	text := "Events enabled\n" +
		"87868,,raw_syscalls:sys_enter,9012345,100.00,,\n" +
		"3949,,context-switches,9012345,100.00,,\n" +
		"58976,,syscalls:sys_enter_read,9012345,100.00,,\n" +
		"<not counted>,,syscalls:sys_enter_readv,0,100.00,,\n" +
		"<not supported>,,syscalls:sys_enter_sendto,0,100.00,,\n" +
		"11988,,syscalls:sys_enter_write,9012345,100.00,,\n" +
		"Events disabled\n"
	got := parsePerfStat(text)
	want := []statCount{{"all", 87868}, {"context-switches", 3949}, {"read", 58976}, {"write", 11988}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	all, by := syscallsByCall([]statCount{{"all", 7.3}, {"read", 4.9}, {"sendto", 0}, {"write", 1}, {"writev", 1}, {"futex", 0.05}, {"close", 0.2}})
	if all != "7.30" || by != "read 4.90, write 1.00, writev 1.00, close 0.2, others 0.2" {
		t.Errorf("by call: %s: %s", all, by)
	}
}

// With --profile, the saturation workloads of the run take a window under
// perf; first (latency) never does.
func TestProfiledWorkloads(t *testing.T) {
	for _, tc := range []struct {
		profile   bool
		workloads []string
		want      []string
	}{
		{true, []string{WorkloadRuns, WorkloadLong, WorkloadFirst}, []string{WorkloadLong, WorkloadRuns}},
		{true, []string{WorkloadRuns, WorkloadFirst}, []string{WorkloadRuns}},
		{true, []string{WorkloadFirst, WorkloadBench}, nil},
		{false, Workloads(), nil},
	} {
		if got := profiledWorkloads(Config{Profile: tc.profile, Workloads: tc.workloads}); !slices.Equal(got, tc.want) {
			t.Errorf("profile %v, %v: %v, want %v", tc.profile, tc.workloads, got, tc.want)
		}
	}
}

// Without perf the window is not taken, the load is not run for it, and
// the profile says why.
func TestProfileWorkloadWithoutPerf(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ran := false
	wp := profileWorkload(Config{OutDir: t.TempDir()}, Case{Name: "agui-relay"}, &Proc{Pid: os.Getpid()}, WorkloadRuns,
		func() RoundResult { ran = true; return RoundResult{} })
	if ran || !strings.Contains(wp.Error, "perf") || wp.Per != "run" || wp.CPU != nil {
		t.Errorf("ran %v, %+v", ran, wp)
	}
}

// Where perf may not attach (as perf_event_paranoid refuses it to a
// user), the window gives up as soon as perf has ended, and the profile
// says what perf said.
func TestProfileWorkloadPerfRefused(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'Error: Access to performance monitoring and observability operations is limited.' >&2\nexit 255\n"
	if err := os.WriteFile(bin+"/perf", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	out := t.TempDir()
	ran := false
	wp := profileWorkload(Config{OutDir: out}, Case{Name: "agui-relay 1.0→0.0.45"}, &Proc{Pid: os.Getpid()}, WorkloadLong,
		func() RoundResult { ran = true; return RoundResult{} })
	if ran || !strings.Contains(wp.Error, "Access to performance monitoring") || wp.Per != "event" {
		t.Errorf("ran %v, %+v", ran, wp)
	}
	// The control FIFOs are gone; the log stays.
	left, _ := os.ReadDir(out + "/profiles")
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"agui-relay-1.0-to-0.0.45-long.log"}) {
		t.Errorf("left %v", names)
	}
}

// Each workload's table of profiles follows its own, one row per case;
// a case perf could not profile says why; the tables before it stay.
func TestProfileTable(t *testing.T) {
	r := secondReport()
	split, _, _ := cpuSplit(cannedReport)
	r.Second[1].Profiles = []WorkloadProfile{{Workload: WorkloadRuns, Per: "run", Units: 60000, CPUPerUnitUS: 37,
		Syscalls: []statCount{{"all", 6.09}, {"writev", 3}, {"recvfrom", 2.01}, {"getsockopt", 1}}, ContextSwitches: 0.08,
		CPU: map[string]float64{grKernel: 79, grOther: 21}, Samples: 1500}}
	r.Second[2].Profiles = []WorkloadProfile{
		{Workload: WorkloadLong, Per: "event", Error: `perf: exec: "perf": executable file not found in $PATH`},
		{Workload: WorkloadRuns, Per: "run", Units: 60000, CPUPerUnitUS: 89,
			Syscalls: []statCount{{"all", 7.32}, {"read", 4.91}, {"write", 1}, {"writev", 0.99}}, ContextSwitches: 0.33, CPU: split, Samples: 2000},
	}
	md := r.Markdown("go run ./bench/cmd/aguibench --workloads all --profile")
	for _, want := range []string{
		"files in `profiles/<case>-runs.*`",
		"| case | CPU µs per run | system calls per run | by call | context switches per run | CPU samples | kernel |",
		"| nginx | 37 | 6.09 | writev 3.00, recvfrom 2.01, getsockopt 1.00, others 0.08 | 0.08 | 1500 | 79.0% | – | – | – | – | – | 21.0% |",
		"| agui-relay | 89 | 7.32 | read 4.91, write 1.00, writev 0.99, others 0.42 | 0.33 | 2000 | 40.0% | 15.5% (4.0 / 4.5 / 5.0 / 2.0) | 3.0% | 6.0% | 2.0% | 17.5% (6.0 / 2.5 / 2.0 / 1.0 / 4.0 / 2.0) | 16.0% |",
		"files in `profiles/<case>-long.*`",
		"| agui-relay | not profiled: perf: exec: \"perf\": executable file not found in $PATH |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The workload's own table comes first, unchanged.
	if i, j := strings.Index(md, "### The cost of a run"), strings.Index(md, "files in `profiles/<case>-runs.*`"); i < 0 || j < i {
		t.Errorf("profile table at %d, runs table at %d", j, i)
	}
	if testing.Verbose() {
		t.Log(md)
	}
	if strings.Count(md, "Under perf (`--profile`)") != 2 {
		t.Errorf("want two profile tables:\n%s", md)
	}
}
