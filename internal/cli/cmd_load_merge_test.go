package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// mergeRecord is a line of runs.jsonl, as load report reads it back: a time
// that did not come is null or 0.
type mergeRecord struct {
	Source       string   `json:"source"`
	Cut          bool     `json:"cut"`
	Headers      *float64 `json:"headers_ms"`
	FirstEvent   *float64 `json:"first_event_ms"`
	FirstContent *float64 `json:"first_content_ms"`
	Run          *float64 `json:"run_ms"`
}

func readRecords(t *testing.T, path string) []mergeRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []mergeRecord
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r mergeRecord
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("%s: %s: %v", path, l, err)
		}
		out = append(out, r)
	}
	return out
}

// mergeResults is what the test reads of a results.json.
type mergeResults struct {
	Command string `json:"command"`
	Targets []string
	Seconds float64
	Levels  []struct {
		Concurrency int
		Results     []struct {
			URL         string
			Concurrency int
			Runs        int64
			Complete    int64
			Events      int64
			Bytes       int64
			Seconds     float64
			RunsSec     float64 `json:"runs_per_sec"`
			Timings     map[string]struct {
				N   int64   `json:"n"`
				Min float64 `json:"min_ms"`
				P50 float64 `json:"p50_ms"`
				P90 float64 `json:"p90_ms"`
				P99 float64 `json:"p99_ms"`
				Max float64 `json:"max_ms"`
			}
		}
	}
	Sources []struct {
		Dir  string
		Runs int64
	}
}

// readResults decodes the results.json a load or load report wrote into
// dir as T, the part of it a test reads.
func readResults[T any](t *testing.T, dir string) T {
	t.Helper()
	var r T
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("%s/results.json: %v", dir, err)
	}
	return r
}

// Two real loads against the demo agent, one of short runs and one of long
// ones, each with --out, added up by load report: the totals are the sums,
// and every percentile is the one of the union of both loads' runs (as
// runs.jsonl records them), not the average of the two loads'.
func TestLoadReportAddsUpTwoLoads(t *testing.T) {
	at, _, _ := startServe(t, nil)
	base := t.TempDir()
	a, b, all := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "all")
	short := at.demo + "/agent?scenario=synthetic&events=10"
	long := at.demo + "/agent?scenario=synthetic&events=3000"
	if code, out, errs := loadCmd(t, context.Background(), "-c", "2", "-n", "30", "--progress", "none", "--out", a, short); code != 0 {
		t.Fatalf("load a: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := loadCmd(t, context.Background(), "-c", "3", "-n", "20", "--progress", "none", "--out", b, long); code != 0 {
		t.Fatalf("load b: exit %d\n%s\n%s", code, out, errs)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"load", "report", "--out", all, a, b}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("load report: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	ra, rb, rm := readResults[mergeResults](t, a), readResults[mergeResults](t, b), readResults[mergeResults](t, all)
	x, y, m := ra.Levels[0].Results[0], rb.Levels[0].Results[0], rm.Levels[0].Results[0]
	if m.Runs != 50 || m.Runs != x.Runs+y.Runs || m.Complete != x.Complete+y.Complete || m.Events != x.Events+y.Events || m.Bytes != x.Bytes+y.Bytes {
		t.Errorf("merged runs %d complete %d events %d bytes %d; the loads': %+v and %+v", m.Runs, m.Complete, m.Events, m.Bytes, x, y)
	}
	if m.Concurrency != 5 || rm.Levels[0].Concurrency != 5 {
		t.Errorf("merged concurrency %d (level %d), want 2+3", m.Concurrency, rm.Levels[0].Concurrency)
	}
	if m.Seconds < max(x.Seconds, y.Seconds) || math.Abs(m.RunsSec-float64(m.Runs)/m.Seconds) > 1e-9 {
		t.Errorf("merged %.3fs, %.2f runs/s: want the span of both loads and their runs over it", m.Seconds, m.RunsSec)
	}
	if len(rm.Targets) != 1 || rm.Targets[0] != short+", "+long || m.URL != rm.Targets[0] {
		t.Errorf("merged targets %q, the level's result's url %q: want both URLs in each", rm.Targets, m.URL)
	}
	if len(rm.Sources) != 2 || rm.Sources[0].Dir != a || rm.Sources[1].Dir != b || rm.Sources[0].Runs != 30 || rm.Sources[1].Runs != 20 {
		t.Errorf("sources %+v", rm.Sources)
	}

	// runs.jsonl: every line of both, each with its source.
	recs := readRecords(t, filepath.Join(all, "runs.jsonl"))
	union := append(readRecords(t, filepath.Join(a, "runs.jsonl")), readRecords(t, filepath.Join(b, "runs.jsonl"))...)
	if len(recs) != len(union) || len(recs) != 50 {
		t.Fatalf("merged runs.jsonl has %d lines, the loads' %d", len(recs), len(union))
	}
	for i, r := range recs {
		if want := map[bool]string{true: a, false: b}[i < 30]; r.Source != want {
			t.Fatalf("line %d: source %q, want %q", i+1, r.Source, want)
		}
	}

	// The percentiles of the union of the records, in a load's histogram.
	for key, time := range map[string]func(mergeRecord) *float64{
		"headers":     func(r mergeRecord) *float64 { return r.Headers },
		"first_event": func(r mergeRecord) *float64 { return r.FirstEvent },
		"run":         func(r mergeRecord) *float64 { return r.Run },
	} {
		h := hdrhistogram.New(1, 3600*1_000_000, 3)
		for _, r := range union {
			if v := time(r); !r.Cut && v != nil && *v > 0 {
				h.RecordValue(int64(math.Round(*v*1e6)) / 1000)
			}
		}
		ms := func(us int64) float64 { return float64(us) / 1000 }
		got := m.Timings[key]
		want := []float64{float64(h.TotalCount()), ms(h.Min()), ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(90)), ms(h.ValueAtQuantile(99)), ms(h.Max())}
		if g := []float64{float64(got.N), got.Min, got.P50, got.P90, got.P99, got.Max}; !equalFloats(g, want) {
			t.Errorf("%s: merged n, min, p50, p90, p99, max %v; of the union of the records %v", key, g, want)
		}
		if avg := (x.Timings[key].P50 + y.Timings[key].P50) / 2; key == "run" && got.P50 == avg {
			t.Errorf("run p50 %v is the average of the loads' (%v, %v)", got.P50, x.Timings[key].P50, y.Timings[key].P50)
		}
	}
	// Short runs are 30 of 50: the union's median run is a short one, far
	// below the average of the two loads' medians.
	if got := m.Timings["run"].P50; got > x.Timings["run"].Max {
		t.Errorf("run p50 %v: above every short run (max %v): not the union's median", got, x.Timings["run"].Max)
	}

	// The report names each source.
	md, _ := os.ReadFile(filepath.Join(all, "report.md"))
	wantContains(t, string(md), "## Sources", "| "+a+" | ", "| "+b+" | ", "source "+a+": "+ra.Command, "source "+b+": "+rb.Command)
	wantContains(t, stdout.String(), "2 loads added up", "source "+a+": ", "A, 5 concurrent", "runs: 50 judged, 50 complete (100.0%)",
		"written: "+filepath.Join(all, "report.md"))
	for _, f := range []string{"latency.svg", "events.svg", "errors.svg", "histogram.svg"} {
		if svg, err := os.ReadFile(filepath.Join(all, f)); err != nil || !bytes.Contains(svg, []byte(a+" A c=2")) || !bytes.Contains(svg, []byte(b+" A c=3")) {
			if f != "histogram.svg" || err != nil {
				t.Errorf("%s does not draw each source: %v", f, err)
			}
		}
	}

	// A threshold on the sum decides the exit status.
	stdout.Reset()
	if code := run([]string{"load", "report", "--threshold", "runs_per_sec>1000000", a, b}, nil, &stdout, &stderr); code != 99 ||
		!strings.Contains(stdout.String(), "FAILED  runs_per_sec>1000000: A, 5 concurrent: ") {
		t.Errorf("a failed threshold: exit %d\n%s", code, stdout.String())
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// load report refuses what does not add up, saying why: a directory that
// is not a load's --out, one given twice, loads of other levels, --out
// over a source.
func TestLoadReportRefusesMismatchedInputs(t *testing.T) {
	at, _, _ := startServe(t, nil)
	base := t.TempDir()
	a, c2, empty := filepath.Join(base, "a"), filepath.Join(base, "c2"), filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	url := at.demo + "/agent?scenario=synthetic&events=5"
	for _, l := range []struct {
		dir string
		c   string
	}{{a, "1"}, {c2, "1,2"}} {
		if code, out, errs := loadCmd(t, context.Background(), "-c", l.c, "-n", "2", "--progress", "none", "--out", l.dir, url); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
	}
	aResults, _ := os.ReadFile(filepath.Join(a, "results.json"))
	noHDR := filepath.Join(base, "old")
	os.Mkdir(noHDR, 0o755)
	js, _ := os.ReadFile(filepath.Join(a, "results.json"))
	var doc map[string]any
	json.Unmarshal(js, &doc)
	for _, lv := range doc["levels"].([]any) {
		delete(lv.(map[string]any), "hdr")
	}
	js, _ = json.Marshal(doc)
	os.WriteFile(filepath.Join(noHDR, "results.json"), js, 0o644)
	os.WriteFile(filepath.Join(noHDR, "runs.jsonl"), nil, 0o644)
	// a spelt otherwise: through a symbolic link, and relative to the
	// working directory.
	alias := filepath.Join(base, "alias")
	if err := os.Symlink(a, alias); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, a)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{a, empty}, 1, "agui-relay load report: " + empty + ": no results.json: not the --out directory of a load that ended\n"},
		{[]string{a, filepath.Join(base, "missing")}, 1, "no such file or directory"},
		{[]string{a, c2}, 1, "agui-relay load report: " + c2 + " ran -c 1,2, " + a + " ran -c 1: the levels differ in number"},
		{[]string{a, noHDR}, 1, noHDR + ": results.json, 1 concurrent: no histograms to add up (written by an agui-relay before load report: run the load again)\n"},
		{[]string{a, a + "/"}, 2, "agui-relay load report: " + a + "/ given twice: its runs would count twice\n"},
		{[]string{"--out", a, a, c2}, 2, "--out " + a + " is one of the loads: the report would overwrite it\n"},
		{[]string{"--out", alias + "/", a, c2}, 2, "--out " + alias + "/ is one of the loads: the report would overwrite it\n"},
		{[]string{"--out", rel, a, c2}, 2, "--out " + rel + " is one of the loads: the report would overwrite it\n"},
		{[]string{a, alias}, 2, "agui-relay load report: " + alias + " given twice: its runs would count twice\n"},
		{[]string{rel, a}, 2, "agui-relay load report: " + a + " given twice: its runs would count twice\n"},
		{nil, 2, "agui-relay load report: want the --out directory of at least one load\n"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"load", "report"}, tc.args...), nil, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
	// What was refused wrote nothing.
	if _, err := os.Stat(filepath.Join(a, "report.md")); err != nil {
		t.Errorf("the load's own report: %v", err)
	}
	if js, _ := os.ReadFile(filepath.Join(a, "results.json")); !bytes.Equal(js, aResults) {
		t.Errorf("%s/results.json was overwritten:\n%s", a, js)
	}
}

// A source none of whose runs had a first event or an end (an agent that
// never responds) shows "–" for those times in the table by source, as the
// timings table does, not 0 ms; one source is "1 load".
func TestLoadReportSourceWithoutTimes(t *testing.T) {
	addr := testkit.AcceptEach(t, func(c net.Conn) { io.Copy(io.Discard, c) }) //nolint:errcheck
	dir := filepath.Join(t.TempDir(), "silent")
	if code, out, errs := loadCmd(t, context.Background(), "-c", "2", "-d", "100ms", "--drain", "100ms", "--progress", "none", "--out", dir, "http://"+addr+"/agent"); code != 1 {
		t.Fatalf("load: exit %d, want 1\n%s\n%s", code, out, errs)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"load", "report", dir}, nil, &stdout, &stderr); code != 1 {
		t.Fatalf("load report: exit %d, want 1\n%s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	wantContains(t, out, "1 load added up, ")
	row := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, dir+" ") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) != 7 || f[3] != "2" || f[4] != "2" || f[5] != "–" || f[6] != "–" {
		t.Errorf("the source's row %q: want 2 runs, 2 failed and no p99s (–)\n%s", row, out)
	}
}
