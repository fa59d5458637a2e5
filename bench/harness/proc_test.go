package harness

import (
	"os"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	// The command name holds a space and a parenthesis.
	line := "4242 (ng inx) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 12345 1000000 500 18446744073709551615\n"
	cpu, th, err := parseStat([]byte(line))
	if err != nil || cpu != 3.25 || th != 3 {
		t.Errorf("parseStat = %g, %d, %v; want 3.25, 3", cpu, th, err)
	}
	if _, _, err := parseStat([]byte("garbage")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestParseStatus(t *testing.T) {
	rss, hwm := parseStatus([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if rss != 1024 || hwm != 2048 {
		t.Errorf("rss %d hwm %d", rss, hwm)
	}
}

func TestSampleSelf(t *testing.T) {
	s, err := SampleTree(os.Getpid())
	if err != nil || s.RSSKiB <= 0 || s.HWMKiB < s.RSSKiB || s.Threads < 1 || s.Procs != 1 {
		t.Errorf("SampleTree(self) = %+v, %v", s, err)
	}
}

func TestNginxConfig(t *testing.T) {
	c := NginxConfig("/tmp/x", "127.0.0.1:1", "127.0.0.1:2", 20000)
	for _, want := range []string{"proxy_buffering off;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`,
		"worker_processes 1;", "daemon off;", "listen 127.0.0.1:1 ", "server 127.0.0.1:2;", "worker_rlimit_nofile 20000;"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q", want)
		}
	}
}

// The tree's time on a CPU is read at the scheduler's resolution and
// grows with work this process does.
func TestTreeRunNanos(t *testing.T) {
	if ns, err := parseSchedstat([]byte("313293641 324862108 846\n")); err != nil || ns != 313293641 {
		t.Errorf("parseSchedstat: %d, %v", ns, err)
	}
	if _, err := parseSchedstat([]byte("1 2\n")); err == nil {
		t.Error("a short line parsed")
	}
	a, err := TreeRunNanos(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; i < 20_000_000; i++ {
		x += i % 7
	}
	b, err := TreeRunNanos(os.Getpid())
	if err != nil || b <= a || x == 0 {
		t.Errorf("%d then %d (%v)", a, b, err)
	}
	if _, err := TreeRunNanos(1 << 30); err == nil {
		t.Error("a process that is not there")
	}
}
