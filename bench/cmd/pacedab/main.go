// Command pacedab compares proxies on the bench's paced load alone: in each
// round every case runs at the same time, each with its own streams from
// one load generator, so that all of them meet the same machine load, and
// the CPU each one spends per event is read from /proc as the bench reads
// it. It prints each round's CPU per event and its ratios against the first
// case, then the median and range of those ratios over the rounds.
//
//	go run ./bench/cmd/pacedab --tcpcopy /tmp/tcpcopy --relay before=/tmp/relay-a --relay after=/tmp/relay-b --rounds 10
//
// Build the relays from worktrees of the commits compared (go build -o
// /tmp/relay-a .) and tcpcopy with go build ./bench/cmd/tcpcopy. On a
// shared machine cases run one after another meet different loads, which
// move CPU per event more than the changes measured; run at once they meet
// the same (bench/README.md, History, has the spreads of both).
//
// --stat counts each case's system calls and context switches per event in
// the window (perf stat); --perf records each case's profile (perf record)
// into a directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agui-relay/agui-relay/bench/harness"
	"github.com/agui-relay/agui-relay/internal/synth"
)

type relayFlags []string

func (r *relayFlags) String() string     { return strings.Join(*r, ",") }
func (r *relayFlags) Set(s string) error { *r = append(*r, s); return nil }

// aCase is one proxy compared.
type aCase struct {
	name string
	c    harness.Case
	bin  harness.Binaries
}

func main() {
	var relays relayFlags
	flag.Var(&relays, "relay", "name=path of an agui-relay binary (repeatable)")
	tcpcopy := flag.String("tcpcopy", "", "path of a tcpcopy binary: the first case when given")
	rounds := flag.Int("rounds", 6, "rounds")
	streams := flag.Int("streams", 400, "paced streams per case")
	rate := flag.Float64("rate", 20, "events per second per stream")
	warmup := flag.Duration("warmup", 1500*time.Millisecond, "warm-up before each window")
	measure := flag.Duration("measure", 4*time.Second, "measured window")
	stat := flag.Bool("stat", false, "count system calls and context switches per event (perf stat)")
	perfDir := flag.String("perf", "", "record each case's profile in each window into DIR/<case>-<round>.data (perf record)")
	flag.Parse()

	var cases []aCase
	if *tcpcopy != "" {
		cases = append(cases, aCase{"tcpcopy", harness.Case{Name: "tcpcopy", Proxy: harness.ProxyTCPCopy, Dialect: synth.Dialect10, Exact: true},
			harness.Binaries{TCPCopy: *tcpcopy}})
	}
	for _, r := range relays {
		name, path, ok := strings.Cut(r, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "--relay %q: want name=path\n", r)
			os.Exit(2)
		}
		// As the bench runs it: its default cap on connections is below
		// the streams of a round.
		cases = append(cases, aCase{name, harness.Case{Name: name, Proxy: harness.ProxyRelay, Dialect: synth.Dialect10, Exact: true},
			harness.Binaries{Relay: path, RelayArgs: []string{"--upstream-max-conns", "30000"}}})
	}
	if len(cases) < 2 {
		fmt.Fprintln(os.Stderr, "pacedab: give at least two cases (--tcpcopy, --relay)")
		os.Exit(2)
	}
	prod, err := synth.StartProducer("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer prod.Close()
	work, err := os.MkdirTemp("", "pacedab-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)

	events := max(int(*rate*5+0.5), 10) // the bench's runs: 5 s at the rate
	plan := prod.Plan(synth.Dialect10, events, synth.Mix{})
	cpu := make([][]float64, len(cases)) // by case, by round
	for round := range *rounds {
		procs := make([]*harness.Proc, len(cases))
		for i, c := range cases {
			if procs[i], err = harness.StartProxy(c.c, c.bin, prod.Addr(), work); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
				os.Exit(1)
			}
		}
		results := make([]harness.PhaseResult, len(cases))
		counts := make([]strings.Builder, len(cases))
		var wg sync.WaitGroup
		for i := range cases {
			wg.Go(func() {
				ld := harness.Load{Streams: *streams, Params: synth.RunParams{Dialect: synth.Dialect10, Events: events, Rate: *rate},
					Warmup: *warmup, Measure: *measure, Exact: true}
				ld.During = func() func() {
					var cmds []*exec.Cmd
					secs := fmt.Sprintf("%.1f", measure.Seconds())
					pid := fmt.Sprint(procs[i].Pid)
					if *stat {
						cmd := exec.Command("perf", "stat", "-x", ",", "-e", statEvents, "-p", pid, "--", "sleep", secs)
						cmd.Stderr = &counts[i]
						cmds = append(cmds, cmd)
					}
					if *perfDir != "" {
						out := fmt.Sprintf("%s/%s-%d.data", *perfDir, cases[i].name, round)
						cmds = append(cmds, exec.Command("perf", "record", "-e", "cpu-clock", "-F", "1999", "-g", "-p", pid, "-o", out, "--", "sleep", secs))
					}
					for _, cmd := range cmds {
						cmd.Start() //nolint:errcheck // a missing perf shows as no counts
					}
					return func() {
						for _, cmd := range cmds {
							cmd.Wait() //nolint:errcheck
						}
					}
				}
				results[i] = harness.RunLoad(procs[i].Addr, procs[i], plan, ld)
			})
		}
		wg.Wait()
		for i, c := range cases {
			procs[i].Stop()
			r := results[i]
			cpu[i] = append(cpu[i], r.CPUPerMEvents)
			fmt.Printf("round %d %-12s %7.0f events/s  CPU %6.2f µs/event  p50 %7.0f µs  p99 %8.0f µs  runs ok %d bad %d failed %d  load %.1f %s\n",
				round, c.name, r.EventsPerSec, r.CPUPerMEvents, r.P50, r.P99, r.RunsOK, r.RunsBad, r.RunsFailed, r.LoadAvg, r.FirstError)
			if *stat {
				fmt.Printf("    per event: %s\n", perEvent(counts[i].String(), r.EventsPerSec*measure.Seconds()))
			}
		}
	}
	for i := 1; i < len(cases); i++ {
		fmt.Println(summary(cases[i].name, cases[0].name, ratios(cpu[i], cpu[0])))
	}
	if len(cases) > 2 && *tcpcopy != "" {
		for i := 2; i < len(cases); i++ {
			fmt.Println(summary(cases[i].name, cases[1].name, ratios(cpu[i], cpu[1])))
		}
	}
}

// statEvents are what --stat counts: every system call, context switches,
// and the calls a proxy's event loop is made of, each on its own.
var statEvents = func() string {
	events := "raw_syscalls:sys_enter,context-switches"
	for _, call := range []string{"read", "write", "writev", "epoll_pwait", "epoll_ctl", "futex", "nanosleep"} {
		events += ",syscalls:sys_enter_" + call
	}
	return events
}()

// perEvent turns perf stat's CSV output ("value,unit,event,...") into each
// event's count per relayed event.
func perEvent(csv string, events float64) string {
	var out []string
	for _, line := range strings.Split(csv, "\n") {
		f := strings.Split(line, ",")
		var v float64
		if len(f) < 3 || events <= 0 {
			continue
		}
		if _, err := fmt.Sscanf(f[0], "%g", &v); err != nil {
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(f[2], "syscalls:sys_enter_"), "raw_syscalls:")
		out = append(out, fmt.Sprintf("%s %.3f", name, v/events))
	}
	return strings.Join(out, ", ")
}

// ratios divides each round's figure of a by b's in the same round.
func ratios(a, b []float64) []float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return r
}

// summary says the median and range of the per-round ratios of a to b.
func summary(a, b string, r []float64) string {
	if len(r) == 0 {
		return fmt.Sprintf("%s / %s: no rounds", a, b)
	}
	s := slices.Clone(r)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	parts := make([]string, len(r))
	for i, x := range r {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%s / %s CPU per event: median ×%.3f, range ×%.3f–%.3f over %d rounds (%s)", a, b, med, s[0], s[len(s)-1], len(r), strings.Join(parts, " "))
}
