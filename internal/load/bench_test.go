//go:build unix

package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
	"github.com/agui-relay/agui-relay/internal/testkit"
)

// BenchmarkGenerator measures what the load generator sustains against
// the demo agent's synthetic scenario (1,000-event runs, as the bench's
// saturation phase) over 100 concurrent streams, through the relay and
// directly, each in a process of its own (agui-relay serve, built from
// this tree: one serves the demo agent, the other relays it), and against
// it a baseline in the same run: the same connections read by a client
// that only counts the bytes (no frames, no timings, no judging). It
// reports events/s and this process's CPU per event (the generator's
// alone); through the relay also the relay process's CPU per event, read
// from /proc, the generator's CPU over the relay's ("gen/relay") and over
// the relay's and the agent's together ("gen/(relay+agent)", what the
// relay's process with its embedded demo agent spends).
//
//	go test -run '^$' -bench Generator -benchtime 3000x ./internal/load/
func BenchmarkGenerator(b *testing.B) {
	relay, demo, relayPID, demoPID := startRelay(b)
	const streams = 100
	events := len(synth.NewPlan(synth.Dialect10, 1000).Kinds)
	for _, target := range []struct{ name, url string }{{"relay", relay}, {"direct", demo}} {
		url := target.url + "/agent?scenario=synthetic&events=1000"
		for _, judge := range []int{0, 16, load.JudgeAuto, 1} {
			name := target.name + "/generator/" + map[int]string{0: "judge=off", 1: "judge=every", 16: "judge=1in16", load.JudgeAuto: "judge=auto"}[judge]
			b.Run(name, func(b *testing.B) {
				cpu0, t0, relay0, demo0 := testkit.CPUTime(), time.Now(), procCPU(b, relayPID), procCPU(b, demoPID)
				res, err := load.Run(context.Background(), load.Config{URL: url, Concurrency: streams, Runs: int64(b.N),
					Timeouts: load.DefaultTimeouts, JudgeEvery: judge})
				if err != nil {
					b.Fatal(err)
				}
				gen := report(b, res.Events, cpu0, t0)
				if target.name == "relay" {
					rc := procCPU(b, relayPID) - relay0
					b.ReportMetric(float64(rc)/float64(res.Events), "relay-cpu-ns/event")
					b.ReportMetric(float64(gen)/float64(rc), "gen/relay")
					b.ReportMetric(float64(gen)/float64(rc+procCPU(b, demoPID)-demo0), "gen/(relay+agent)")
				}
				b.ReportMetric(float64(res.Judged)/float64(res.Events), "judged/event")
				if res.Complete != int64(b.N) || res.Events != int64(b.N*events) {
					b.Fatalf("complete %d of %d, %d events: %v", res.Complete, b.N, res.Events, res.Examples)
				}
			})
		}
		b.Run(target.name+"/baseline/bytes-only", func(b *testing.B) { bytesOnly(b, url, streams, events) })
	}
}

// bytesOnly runs b.N runs over streams connections, counting the bytes.
func bytesOnly(b *testing.B, url string, streams, events int) {
	var mu sync.Mutex
	next := 0
	var total int64
	var wg sync.WaitGroup
	cpu0, t0 := testkit.CPUTime(), time.Now()
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := load.NewClient(url, nil, load.DefaultTimeouts)
			defer c.Close()
			var n int64
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= b.N {
					break
				}
				if err := c.Run(context.Background(), load.DefaultInput, func(load.Response) {}, func(p []byte) { n += int64(len(p)) }); err != nil {
					b.Error(err)
					return
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	report(b, int64(b.N*events), cpu0, t0)
	b.ReportMetric(float64(total)/float64(b.N*events), "bytes/event")
}

// startRelay builds agui-relay from this tree and serves, on free ports
// until the benchmark ends, its demo agent in one process and the relay
// of it in another; it returns the relay's and the demo agent's base URLs
// (from each process's first log line) and the two processes' ids.
func startRelay(b *testing.B) (relay, demo string, relayPID, demoPID int) {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "agui-relay")
	if out, err := exec.Command("go", "build", "-o", bin, "../..").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	start := func(args ...string) (listen, upstream string, pid int) {
		cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--demo-pace", "0", "--log-level", "info"}, args...)...)
		// Its log (a line a run) goes to a file, not through this process,
		// whose CPU is the generator's.
		logs, err := os.Create(filepath.Join(b.TempDir(), "log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logs.Close() })
		var line []byte
		testkit.WaitFor(b, "the first log line", func() bool {
			all, _ := os.ReadFile(logs.Name())
			line, _, _ = bytes.Cut(all, []byte("\n"))
			return len(line) < len(all)
		})
		var first struct{ Listen, Upstream string }
		if err := json.Unmarshal(line, &first); err != nil || first.Listen == "" || first.Upstream == "" {
			b.Fatalf("the first log line %q: %v", line, err)
		}
		return first.Listen, first.Upstream, cmd.Process.Pid
	}
	_, demo, demoPID = start()
	listen, _, relayPID := start("--upstream", demo)
	return "http://" + listen, demo, relayPID, demoPID
}

// procCPU is a process's user and system CPU time so far, from
// /proc/<pid>/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis, from the state
	// (field 3): utime and stime are fields 14 and 15, in clock ticks.
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+stt) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// report reports the events/s and this process's CPU per event since cpu0
// and t0, and returns that CPU.
func report(b *testing.B, events int64, cpu0 time.Duration, t0 time.Time) time.Duration {
	secs := time.Since(t0).Seconds()
	cpu := testkit.CPUTime() - cpu0
	b.ReportMetric(float64(events)/secs, "events/s")
	b.ReportMetric(float64(cpu)/float64(events), "cpu-ns/event")
	b.ReportMetric(0, "ns/op")
	return cpu
}
