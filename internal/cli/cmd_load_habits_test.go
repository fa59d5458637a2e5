package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// authAgent answers a run with a bearer token, and HTTP 401 otherwise.
func authAgent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sekret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// -H is --header, as curl and hey write it, for load and check --url.
func TestLoadAndCheckTakeH(t *testing.T) {
	url := authAgent(t)
	code, out, errs := loadCmd(t, context.Background(), "-n", "2", "-c", "1", "--progress", "none", "-H", "Authorization: Bearer sekret", url)
	if code != 0 {
		t.Fatalf("load: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "", "check", "--url", url, "-H", "Authorization: Bearer sekret")
	if code != 0 || strings.Contains(out+errs, "HTTP 401") {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
	}
}

// Thresholds take p95 and every unit of Go's time.ParseDuration; the
// report has a p95 column.
func TestThresholdsTakeP95AndGoDurations(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		stat string
		ms   float64
	}{
		{"first_event.p95<1h", "p95", 3.6e6},
		{"run.p99<500ns", "p99", 0.0005},
		{"gap.max<=1ns", "max", 1e-6},
		{"headers.p50<1.5s", "p50", 1500},
		{"run.mean<2m", "mean", 120000},
		{"run.p90<250µs", "p90", 0.25},
		{"run.p90<250us", "p90", 0.25},
	} {
		th, err := parseThreshold(tc.arg)
		if err != nil || th.stat != tc.stat || math.Abs(th.value-tc.ms) > 1e-9*tc.ms {
			t.Errorf("%s: %+v, %v; want %s at %v ms", tc.arg, th, err, tc.stat, tc.ms)
		}
	}
	for _, tc := range []struct{ arg, want string }{
		{"first_event.p99<200", "a time takes a unit: ns, us (µs), ms, s, m or h"},
		{"first_event.p99<1n", `"1n" is not a duration of at least 0`},
		{"first_event.p99<-1s", `"-1s" is not a duration of at least 0`},
		{"first_event.p97<1s", `unknown statistic "p97" (min, mean, p50, p90, p95, p99, p99.9, max)`},
	} {
		if _, err := parseThreshold(tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.arg, err, tc.want)
		}
	}
	url := authAgent(t)
	code, out, errs := loadCmd(t, context.Background(), "-n", "4", "-c", "2", "--progress", "none", "-H", "Authorization: Bearer sekret",
		"--threshold", "first_event.p95<1h", url)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "ok      first_event.p95<1h: A, 2 concurrent: ")
	header := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "time ") {
			header = strings.Join(strings.Fields(l), " ")
		}
	}
	if header != "time min mean p50 p90 p95 p99 p99.9 max n" {
		t.Errorf("the timings' columns: %q", header)
	}
}

// --rate takes vegeta's N/PERIOD (20/s, 20/1s, 1200/1m); a duration
// without a unit says so.
func TestLoadRateAndDurationHabits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"20", 20, true}, {"20/s", 20, true}, {"0.5/s", 0.5, true}, {"20/1s", 20, true}, {"1200/1m", 20, true}, {"1200/m", 20, true},
		{"1/500ms", 2, true}, {"5/0.5s", 10, true}, {"0/s", 0, true},
		{"-1", 0, false}, {"20/", 0, false}, {"20/0s", 0, false}, {"20/-1s", 0, false}, {"20/x", 0, false}, {"20/5", 0, false}, {"NaN", 0, false}, {"NaN/s", 0, false}} {
		got, err := parseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRate(%q) = %v, %v", tc.in, got, err)
		}
	}
	url := authAgent(t)
	code, out, errs := loadCmd(t, context.Background(), "-n", "2", "-c", "1", "--rate", "1000/s", "--progress", "none", "-H", "Authorization: Bearer sekret", url)
	if code != 0 {
		t.Fatalf("--rate 1000/s: exit %d\n%s\n%s", code, out, errs)
	}
	for _, tc := range []struct{ args []string }{{[]string{"-d", "5"}}, {[]string{"--drain", "5"}}, {[]string{"--idle-timeout", "5"}}} {
		code, out, errs := loadCmd(t, context.Background(), append(tc.args, url)...)
		if code != 2 || !strings.Contains(errs, "a duration takes a unit, for example 5s") {
			t.Errorf("%v: exit %d\n%s\n%s", tc.args, code, out, errs)
		}
	}
	code, _, errs = loadCmd(t, context.Background(), "-d", "soon", url)
	if code != 2 || !strings.Contains(errs, `"soon" is not a duration`) {
		t.Errorf("-d soon: exit %d\n%s", code, errs)
	}
}

// In runs.jsonl a time that did not happen is absent, not 0; in
// results.json judge_every says auto.
func TestLoadFilesSayWhatHappened(t *testing.T) {
	url := authAgent(t)
	dir := t.TempDir()
	// Without the token every run is a 401: headers, no event.
	code, out, errs := loadCmd(t, context.Background(), "-n", "2", "-c", "1", "--progress", "none", "--out", dir, url)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines, _ := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		_, first := rec["first_event_ms"]
		_, content := rec["first_content_ms"]
		if first || content || rec["headers_ms"] == nil || rec["run_ms"] == nil || rec["error_kind"] != "http 401" {
			t.Errorf("runs.jsonl: %s", l)
		}
	}
	judgeEvery := func() any {
		var rep struct {
			Levels []struct {
				Results []map[string]any `json:"results"`
			} `json:"levels"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
		if err := json.Unmarshal(b, &rep); err != nil || len(rep.Levels) != 1 || len(rep.Levels[0].Results) != 1 {
			t.Fatalf("results.json: %v: %.300s", err, b)
		}
		return rep.Levels[0].Results[0]["judge_every"]
	}
	if v := judgeEvery(); v != "auto" {
		t.Errorf("judge_every %v", v)
	}
	code, out, errs = loadCmd(t, context.Background(), "-n", "1", "-c", "1", "--progress", "none", "--out", dir, "--judge-every", "3", url)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if v := judgeEvery(); v != 3.0 {
		t.Errorf("judge_every %v", v)
	}
}

// The help's examples run as shown: the token in double quotes, so that
// the shell expands it, and the exit statuses as they are.
func TestLoadAndCheckHelpExamples(t *testing.T) {
	for _, args := range [][]string{{"load", "--help"}, {"check", "--help"}} {
		code, out, errs := runCmd(t, "", args...)
		help := out + errs
		if code != 0 || !strings.Contains(help, `--header "Authorization: Bearer $TOKEN"`) || strings.Contains(help, `'Authorization: Bearer $TOKEN'`) {
			t.Errorf("%v: exit %d, the --header example:\n%s", args, code, help)
		}
		if args[0] == "load" {
			wantContains(t, help, "with --threshold the thresholds alone decide: 0\nwhen every one held, 99 when one was crossed", "143 on SIGTERM",
				"# a CI gate: exit 99 when the p99 time to first event or the share of", "-H header", "-rate number",
				"mean,\np50/p90/p95/p99/p99.9 and max") // the report's columns
			if strings.Contains(help, "the errors are over") {
				t.Errorf("load --help: the CI example's exit 1:\n%s", help)
			}
		}
	}
}

// A flag of k6, vegeta or hey that load does not define is named with what
// load takes instead; a defined flag's value that begins with "-" is a
// value, not a flag.
func TestLoadNamesOtherToolsFlags(t *testing.T) {
	url := authAgent(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vus", "2", url}, "flag provided but not defined: -vus (k6's --vus is -c here (concurrent runs))"},
		{[]string{url, "-z", "5s"}, "flag provided but not defined: -z (hey's -z is -d here (-d 30s))"},
		{[]string{"--insecure", "--duration=5s", url}, "flag provided but not defined: -duration (k6's and vegeta's --duration is -d here (-d 30s))"},
		{[]string{"-c", "1", "-q", "5", url}, "hey's -q, a rate per worker, is --rate here"},
		{[]string{"--nosuch", url}, "flag provided but not defined: -nosuch\n"},
		{[]string{"-n", "1", "-c", "1", "--progress", "none", "--out", "json=results.json", url}, "--out json=results.json: k6's output=FILE; here --out takes a directory"},
		{[]string{"-n", "1", "-c", "1", "--progress", "none", "--out=csv=r.csv", url}, "--out csv=r.csv: k6's output=FILE; here --out takes a directory"},
	} {
		code, out, errs := loadCmd(t, context.Background(), tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	code, out, errs := loadCmd(t, context.Background(), "--name", "-z", "-n", "1", "-c", "1", "--progress", "none", "-H", "Authorization: Bearer sekret", url)
	if code != 0 || !strings.Contains(out, "-z: "+url) {
		t.Errorf("--name -z: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = loadCmd(t, context.Background(), "-n", "1", "--", "-z")
	if code != 2 || strings.Contains(errs, "hey's") {
		t.Errorf("-- -z: exit %d, %s: after --, -z is the URL", code, errs)
	}
}
