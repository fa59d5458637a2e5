package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
)

func loadCmd(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := loadCommand(ctx, args, &out, &errb, false)
	return code, out.String(), errb.String()
}

// The demo agent's synthetic scenario through the relay, and against it
// the demo agent directly: every run complete, the report's tables, and
// the files of --out.
func TestLoadThroughTheRelay(t *testing.T) {
	at, _, _ := startServe(t, nil)
	through := "http://" + at.relay + "/agent?scenario=synthetic&events=200"
	direct := at.demo + "/agent?scenario=synthetic&events=200"
	dir := t.TempDir()
	code, out, errs := loadCmd(t, context.Background(), "-c", "2,4", "-n", "16", "--out", dir, "--compare", direct, "--rounds", "2",
		"--name", "direct", "--name", "relay", "--threshold", "errors<0.1%", "--threshold", "first_event.p99 < 60s", through)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// A and B in the command line's order: --compare's URL first.
	wantContains(t, out, "direct: "+direct+"\nrelay: "+through,
		" min ", " mean ", "first content", "gap between events", "whole run", "p99.9",
		"first event histogram:\n  ≤ ",
		"runs: 16 judged, 16 complete (100.0%), 16 with RUN_FINISHED", "errors: none",
		"every judged run's terminal event checked, and the order of 16 (every run's up to 200.0k events a second, a sample above)",
		"relay against direct, 4 concurrent, in alternating rounds:", " (2)\n", "concurrency  target",
		"thresholds:\n  ok      errors<0.1%: direct, 2 concurrent: 0%", "ok      first_event.p99 < 60s: relay, 4 concurrent: ")
	// The table's columns are as wide as their widest cell, a ratio's too.
	if !regexp.MustCompile(`relay/direct +rounds min–max`).MatchString(out) {
		t.Errorf("output lacks the ratio table's header:\n%s", out)
	}
	wantContains(t, errs, "load: c=2 direct round 1/2", "load: c=4 relay round 2/2")
	wantContains(t, out, fmt.Sprintf("written: %[1]s/report.md, %[1]s/results.json, %[1]s/runs.jsonl, %[1]s/errors.svg, %[1]s/events.svg, %[1]s/histogram.svg, %[1]s/latency.svg, %[1]s/p99.svg, %[1]s/throughput.svg", dir))
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	wantContains(t, string(md), "`agui-relay load -c 2,4 -n 16 --out "+dir+" --compare '"+direct+"' --rounds 2 --name direct --name relay --threshold 'errors<0.1%' --threshold 'first_event.p99 < 60s' '"+through+"'`")
	lines, _ := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var rec struct {
			Target      string  `json:"target"`
			Concurrency int     `json:"concurrency"`
			Round       int     `json:"round"`
			Status      int     `json:"status"`
			Events      int64   `json:"events"`
			Run         float64 `json:"run_ms"`
			Order       bool    `json:"order_checked"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Status != 200 || rec.Events == 0 || rec.Run <= 0 || rec.Round < 1 || (rec.Target != "direct" && rec.Target != "relay") || !rec.Order {
			t.Errorf("runs.jsonl: %s: %v", l, err)
		}
		n++
	}
	if n != 64 {
		t.Errorf("runs.jsonl has %d lines, want 64", n)
	}
	rep := readResults[struct {
		Levels []struct {
			Concurrency int `json:"concurrency"`
			Results     []struct {
				Runs, Complete, Events int64
				Timings                map[string]struct {
					N         int64   `json:"n"`
					P99       float64 `json:"p99_ms"`
					Histogram []struct {
						Count int64 `json:"count"`
					} `json:"histogram"`
				}
				Series []struct {
					Bytes int64 `json:"bytes"`
				} `json:"series"`
			} `json:"results"`
			RoundRatios map[string][]float64 `json:"round_ratios"`
		} `json:"levels"`
		Thresholds []struct {
			OK bool `json:"ok"`
		} `json:"thresholds"`
	}](t, dir)
	if len(rep.Levels) != 2 || rep.Levels[1].Concurrency != 4 || len(rep.Levels[1].Results) != 2 {
		t.Fatalf("results.json: %+v", rep)
	}
	for _, lv := range rep.Levels {
		for _, r := range lv.Results {
			if r.Runs != 16 || r.Complete != 16 || r.Events == 0 || r.Timings["first_content"].N != 16 {
				t.Errorf("c=%d: %+v", lv.Concurrency, r)
			}
			var inHist, bytes int64
			for _, b := range r.Timings["run"].Histogram {
				inHist += b.Count
			}
			for _, p := range r.Series {
				bytes += p.Bytes
			}
			if inHist != 16 || bytes == 0 {
				t.Errorf("c=%d: %d runs in the histogram, %d bytes in the series", lv.Concurrency, inHist, bytes)
			}
		}
		if len(lv.RoundRatios["events/s"]) != 2 {
			t.Errorf("c=%d: round ratios %v", lv.Concurrency, lv.RoundRatios)
		}
	}
	if len(rep.Thresholds) != 8 {
		t.Errorf("%d threshold verdicts, want 2 × 2 targets × 2 levels", len(rep.Thresholds))
	}
	for _, f := range []string{"report.md", "latency.svg", "throughput.svg", "p99.svg", "events.svg", "errors.svg", "histogram.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.HasSuffix(f, ".svg") && (!bytes.HasPrefix(b, []byte("<svg")) || bytes.Contains(b, []byte("no data"))) {
			t.Errorf("%s: %.80s", f, b)
		}
	}
}

// refusedURL is the URL of a port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	return "http://" + ln.Addr().String() + "/agent"
}

func TestLoadClearErrors(t *testing.T) {
	gone := refusedURL(t)
	notSSE := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>login</html>")
	}))
	defer notSSE.Close()
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"threadId":"t","runId":"r","messages":[{"role":"user"}]}`), 0o644)
	notJSON := filepath.Join(t.TempDir(), "not.json")
	os.WriteFile(notJSON, []byte(`threadId: t`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"-n", "3", "-c", "1", gone}, 1, "refused                 3  e.g. refused: dial tcp"},
		{[]string{"-n", "2", "-c", "1", notSSE.URL}, 1, `not SSE                 2  e.g. not SSE: HTTP 200 with Content-Type "text/html", not text/event-stream: <html>login</html>`},
		{[]string{"-n", "1", "--input", bad, gone}, 1, "--input " + bad + ": malformed for AG-UI 1.0 at /messages/0/id: required"},
		{[]string{"-n", "1", "--input", notJSON, gone}, 1, "--input " + notJSON + ": not a JSON object"},
		{[]string{"-n", "1", "--input", "/nonexistent.json", gone}, 1, "no such file"},
		{[]string{"-n", "1", "localhost:8080/agent"}, 2, `"localhost:8080/agent" is not an http:// or https:// URL`},
		{[]string{"-c", "0", gone}, 2, `invalid value "0" for flag -c`},
		{[]string{"--header", "novalue", gone}, 2, `is not 'Name: value'`},
		{[]string{"--progress", "fancy", gone}, 2, `--progress "fancy"`},
		{[]string{}, 2, "agui-relay load: want one URL, got 0\nRun 'agui-relay load --help' for usage.\n"},
	} {
		code, out, errs := loadCmd(t, context.Background(), tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.out) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s\n%s", tc.args, code, tc.code, tc.out, out, errs)
		}
	}
}

func TestLoadHelp(t *testing.T) {
	code, out, _ := loadCmd(t, context.Background(), "--help")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	wantContains(t, out, "usage: agui-relay load [flags] URL", "examples:", "--compare http://", "-idle-timeout duration", "(default 5m0s)", "-judge-every")
}

// Ctrl-C ends the load at once, fails the runs in flight as unfinished
// and still prints the report of what ran.
func TestLoadInterruptedStillReports(t *testing.T) {
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			RunID string `json:"runId"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":%q}\n\n", in.RunID)
		if strings.HasSuffix(in.RunID, "-0") {
			fmt.Fprintf(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":%q}\n\n", in.RunID)
			return
		}
		w.(http.Flusher).Flush()
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 3; i++ {
			<-arrived
		}
		cancel()
	}()
	code, out, errs := loadCmd(t, ctx, "-c", "3", "-d", "1h", srv.URL)
	if code != 130 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "interrupted: the report covers what ran until then",
		"runs: 6 judged, 3 complete (50.0%), 3 with RUN_FINISHED; 3 unfinished (in flight at the load's end: failed)",
		"unfinished              3  e.g. still in flight when the load was interrupted, silent for ")
	wantLastLine(t, out, "exit 130: interrupted by SIGINT; the report covers what ran until then")
}

// wantLastLine checks the last line printed.
func wantLastLine(t *testing.T, out, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if got := lines[len(lines)-1]; got != want {
		t.Errorf("last line %q, want %q\n%s", got, want, out)
	}
}

// On a terminal the progress is a bar whose description carries the
// counts; the report is the same.
func TestLoadProgressBarOnATerminal(t *testing.T) {
	at, _, _ := startServe(t, nil)
	var out, errb bytes.Buffer
	code := loadCommand(context.Background(), []string{"-c", "2", "-n", "6", "--interval", "1ms", at.demo + "/agent?scenario=synthetic&events=2000&rate=20000"}, &out, &errb, true)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	wantContains(t, errb.String(), "c=2", "complete", "|")
	if strings.Contains(errb.String(), "load: c=2") {
		t.Errorf("plain lines on a terminal:\n%s", errb.String())
	}
	wantContains(t, out.String(), "runs: 6 judged, 6 complete")
}

// Ctrl-C to the real process: the runs in flight are unfinished, the
// report of what ran is printed, and the exit status is 130; SIGTERM the
// same with 143 (128 + 15), as a shell reports a process it ended.
func TestLoadSIGINTPrintsTheReport(t *testing.T) {
	bin := relayBinary(t)
	for _, tc := range []struct {
		sig  os.Signal
		code int
		name string
	}{{os.Interrupt, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		srv, arrived := stuckProducer(t, 8)
		cmd := exec.Command(bin, "load", "-c", "2", "-d", "1h", "--progress", "none", srv.URL)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		<-arrived
		<-arrived
		cmd.Process.Signal(tc.sig)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
			t.Fatalf("%s: %v, want exit %d\n%s", tc.name, err, tc.code, out.String())
		}
		wantContains(t, out.String(), "interrupted: the report covers what ran until then", "2 unfinished (in flight at the load's end: failed)")
		wantLastLine(t, out.String(), fmt.Sprintf("exit %d: interrupted by %s; the report covers what ran until then", tc.code, tc.name))
	}
}

// -n runs per target are split between the rounds of --compare, each
// round at least one run.
func TestSplitRuns(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		rounds int
		want   []int64
	}{{10, 4, []int64{3, 3, 2, 2}}, {4, 4, []int64{1, 1, 1, 1}}, {0, 2, []int64{0, 0}}} {
		var got []int64
		for r := 0; r < tc.rounds; r++ {
			got = append(got, splitRuns(tc.n, tc.rounds, r))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("splitRuns(%d, %d) = %v, want %v", tc.n, tc.rounds, got, tc.want)
		}
	}
	at, _, _ := startServe(t, nil)
	code, out, errs := loadCmd(t, context.Background(), "-n", "2", "--compare", at.demo+"/agent?scenario=synthetic&events=10", "http://"+at.relay+"/agent?scenario=synthetic&events=10")
	if code != 0 || strings.Count(out, "runs: 2 judged, 2 complete") != 2 {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// The report's command pastes back into a POSIX shell as it ran: every
// argument quoted as the shell reads it.
func TestShellQuote(t *testing.T) {
	args := []string{"-c", "2", "http://127.0.0.1:8080/agent?scenario=synthetic&events=10", "it's", "", "a b", "$HOME", "--header", "Authorization: Bearer x"}
	q := shellQuote(args)
	got, err := exec.Command("sh", "-c", `f() { for a in "$@"; do printf '[%s]' "$a"; done; }; f `+q).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, a := range args {
		want.WriteString("[" + a + "]")
	}
	if string(got) != want.String() {
		t.Errorf("sh reads %s back as %s, want %s", q, got, want.String())
	}
	if !strings.HasPrefix(q, "-c 2 'http://") {
		t.Errorf("%s: plain words need no quotes", q)
	}
}

// Durations print in the unit that suits them, to a microsecond.
func TestDurUnits(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{{0, "0"}, {0.001, "1.00 µs"}, {0.0434, "43.4 µs"}, {0.5, "500 µs"}, {12.5, "12.5 ms"}, {1500, "1.50 s"}} {
		if got := dur(tc.ms); got != tc.want {
			t.Errorf("dur(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	if got := ratio(0.008, 0.004); got != "×2.00" {
		t.Errorf("ratio of µs gaps %q", got)
	}
}

// A Ctrl-C before any run ended: the runs in flight are the report's runs,
// unfinished.
func TestLoadInterruptedBeforeAnyRunEnded(t *testing.T) {
	srv, arrived := stuckProducer(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		<-arrived
		cancel()
	}()
	code, out, errs := loadCmd(t, ctx, "-c", "2", "-d", "1h", "--progress", "none", srv.URL)
	if code != 130 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "runs: 2 judged, 0 complete (0.0%), 0 with RUN_FINISHED; 2 unfinished (in flight at the load's end: failed)",
		"unfinished              2  e.g. still in flight when the load was interrupted, silent for ")
	if strings.Contains(out, "raise --drain") {
		t.Errorf("an interrupted load points at --drain:\n%s", out)
	}
}

// A crossed threshold sets the exit status, 99 as in k6, and is listed.
func TestLoadThresholds(t *testing.T) {
	at, _, _ := startServe(t, nil)
	url := at.demo + "/agent?scenario=synthetic&events=20"
	code, out, errs := loadCmd(t, context.Background(), "-n", "4", "-c", "2", "--threshold", "first_event.p99<1us", "--threshold", "errors<=0%", url)
	if code != 99 {
		t.Fatalf("exit %d, want 99\n%s\n%s", code, out, errs)
	}
	wantLastLine(t, out, "exit 99: 1 of 2 threshold verdicts crossed (with --threshold, the thresholds alone decide)")
	wantContains(t, out, "thresholds:\n  FAILED  first_event.p99<1us: A, 2 concurrent: ", "\n  ok      errors<=0%: A, 2 concurrent: 0%")
	for _, tc := range []struct{ arg, want string }{
		{"first_event.p99<200", "a time takes a unit"},
		{"errors<1", "takes a percentage"},
		{"latency.p99<1ms", `unknown metric "latency.p99"`},
		{"run.p42<1ms", `unknown statistic "p42"`},
		{"run.p99=1ms", "want METRIC OP VALUE"},
	} {
		code, out, errs := loadCmd(t, context.Background(), "-n", "1", "--threshold", tc.arg, url)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("--threshold %s: exit %d, want 2 with %q\n%s%s", tc.arg, code, tc.want, out, errs)
		}
	}
}

// A rate the slots cannot keep is said; a producer that ignores the posted
// ids is said.
func TestLoadWarnsOfRateAndIgnoredIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"fixed\",\"runId\":\"fixed\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"fixed\",\"runId\":\"fixed\"}\n\n")
	}))
	defer srv.Close()
	code, out, errs := loadCmd(t, context.Background(), "-n", "3", "-c", "1", "--rate", "1e9", "--progress", "none", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "warning: --rate 1e+09 not reached: runs started at ", "(every slot was busy: raise -c)",
		"ids: 3 of 3 runs answered with a threadId or runId other than the posted one: the producer ignores them", `RUN_STARTED said "fixed" and "fixed"`)
}

// With --compare each round is drawn where it ran on the load's clock, a
// target's line broken between its rounds, not its rounds end to end.
func TestLoadPlotsRoundsOnTheLoadsClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	round := func(startS float64) *load.Result {
		return &load.Result{Started: t0.Add(time.Duration(startS * float64(time.Second))),
			Series: []load.Point{{At: 1, FirstEvent: load.Summary{N: 1, P50: 5, P99: 5}}, {At: 2, FirstEvent: load.Summary{N: 1, P50: 6, P99: 6}}}}
	}
	a1, b1, b2, a2 := round(0), round(2), round(4), round(6)
	rep := &loadReport{Targets: []string{"http://a/", "http://b/"}, Started: t0,
		Levels: []loadLevel{{Concurrency: 1, Results: []*load.Result{a1, b1}, rounds: [][]*load.Result{{a1, a2}, {b1, b2}}}}}
	lat := rep.plots()["latency.svg"]
	var xs []string
	for _, p := range lat.Series[0].Points { // A c=1 p50
		if math.IsNaN(p.Y) {
			xs = append(xs, "|")
		} else {
			xs = append(xs, fmt.Sprint(p.X))
		}
	}
	if got := strings.Join(xs, " "); got != "1 2 | 7 8" {
		t.Errorf("A's first events at %s, want 1 2 | 7 8", got)
	}
}

// stuckProducer is an agent that starts every run and then says nothing
// until the request goes; arrived gets a value as each run has started
// (buffered for n).
func stuckProducer(t *testing.T, n int) (srv *httptest.Server, arrived chan struct{}) {
	t.Helper()
	arrived = make(chan struct{}, n)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
		w.(http.Flusher).Flush()
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}
