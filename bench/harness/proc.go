package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux build the bench targets.
const clockTicks = 100

// ProcSample is what /proc says about a process tree at one moment.
type ProcSample struct {
	CPUSeconds float64 // user+system, over the tree
	RSSKiB     int64   // VmRSS, summed over the tree
	HWMKiB     int64   // VmHWM (peak RSS), summed over the tree
	Threads    int64
	Procs      int
}

// SampleTree reads the process pid and its live children (nginx's workers).
func SampleTree(pid int) (ProcSample, error) {
	var s ProcSample
	pids := append([]int{pid}, Children(pid)...)
	for i, p := range pids {
		cpu, threads, err := readStat(p)
		if err != nil {
			if i == 0 {
				return s, err
			}
			continue
		}
		rss, hwm, err := readStatus(p)
		if err != nil {
			continue
		}
		s.CPUSeconds += cpu
		s.Threads += threads
		s.RSSKiB += rss
		s.HWMKiB += hwm
		s.Procs++
	}
	return s, nil
}

// readStat returns utime+stime in seconds and the thread count.
func readStat(pid int) (float64, int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStat(b)
}

// parseStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after the last ')'.
func parseStat(b []byte) (cpu float64, threads int64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("bad stat %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, num_threads 20.
	if len(f) < 18 {
		return 0, 0, fmt.Errorf("short stat %q", b)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	th, err3 := strconv.ParseInt(f[17], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("bad stat %q", b)
	}
	return float64(ut+st) / clockTicks, th, nil
}

func readStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	rss, hwm = parseStatus(b)
	return rss, hwm, nil
}

func parseStatus(b []byte) (rss, hwm int64) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS", "VmHWM":
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if k == "VmRSS" {
				rss = n
			} else {
				hwm = n
			}
		}
	}
	return rss, hwm
}

// Children lists the live child processes of pid.
func Children(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TreeRunNanos is the time on a CPU of every thread of the process pid
// and of its live children (nginx's workers), in nanoseconds, from each
// thread's /proc/<pid>/task/<tid>/schedstat: user and system time alike,
// at the scheduler's resolution where /proc/<pid>/stat counts 10 ms
// ticks. A thread that exited took its time with it; the proxies keep
// theirs.
func TreeRunNanos(pid int) (int64, error) {
	var total int64
	for i, p := range append([]int{pid}, Children(pid)...) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*", p))
		if err != nil || len(tasks) == 0 {
			if i == 0 {
				return 0, fmt.Errorf("no threads of process %d", p)
			}
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(t + "/schedstat")
			if err != nil {
				continue // exited meanwhile
			}
			ns, err := parseSchedstat(b)
			if err != nil {
				return 0, err
			}
			total += ns
		}
	}
	return total, nil
}

// parseSchedstat reads the first field of a schedstat line: nanoseconds
// on a CPU.
func parseSchedstat(b []byte) (int64, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, fmt.Errorf("bad schedstat %q", b)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// LoadAvg returns the one-minute load average.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
