package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// hangingAgent answers every run at once but every 10th, the first among
// them, which stops after RUN_STARTED and holds its connection.
func hangingAgent(t *testing.T) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
		if n.Add(1)%10 == 1 {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A run that hangs fails the load: in errors, in complete, in the
// thresholds, in the exit status, in results.json and runs.jsonl.
func TestLoadHungRunsFail(t *testing.T) {
	url := hangingAgent(t)
	dir := t.TempDir()
	code, out, errs := loadCmd(t, context.Background(), "-c", "4", "-d", "300ms", "--drain", "200ms", "--progress", "none", "--out", dir,
		"--threshold", "errors<1%", "--threshold", "complete>99%", url)
	if code != 99 {
		t.Fatalf("exit %d, want 99\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "FAILED  errors<1%: A, 4 concurrent: ", "FAILED  complete>99%: A, 4 concurrent: ",
		"unfinished (in flight at the load's end: failed)", "still in flight when the drain ended, silent for ")
	wantLastLine(t, out, "exit 99: 2 of 2 threshold verdicts crossed (with --threshold, the thresholds alone decide)")
	rep := readResults[struct {
		Levels []struct {
			Results []struct {
				Runs, Complete, Unfinished int64
				Errors                     map[string]int64
			} `json:"results"`
		} `json:"levels"`
	}](t, dir)
	res := rep.Levels[0].Results[0]
	if res.Unfinished < 1 || res.Errors["unfinished"] != res.Unfinished || res.Complete != res.Runs-res.Unfinished {
		t.Errorf("results.json: %+v", res)
	}
	lines, _ := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	var unfinished int64
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["error_kind"] != "unfinished" {
			continue
		}
		unfinished++
		if _, ok := rec["run_ms"]; ok || rec["silent_ms"] == nil || rec["first_event_ms"] == nil {
			t.Errorf("runs.jsonl: %s", l)
		}
	}
	if unfinished != res.Unfinished {
		t.Errorf("runs.jsonl has %d unfinished runs, results.json %d", unfinished, res.Unfinished)
	}

	// Without thresholds, any failed run fails the load.
	code, out, errs = loadCmd(t, context.Background(), "-c", "4", "-d", "300ms", "--drain", "100ms", "--progress", "none", url)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "\nexit 1: ") || !strings.Contains(out, " runs failed (without --threshold, any failed run fails the load)") {
		t.Errorf("the last line does not say why:\n%s", out)
	}
}

// An agent that accepts connections and never responds fails the load.
func TestLoadAgentThatNeverRespondsFails(t *testing.T) {
	// It reads the requests and never responds, until the load closes the
	// connection.
	addr := testkit.AcceptEach(t, func(c net.Conn) { io.Copy(io.Discard, c) }) //nolint:errcheck
	code, out, errs := loadCmd(t, context.Background(), "-c", "2", "-d", "100ms", "--drain", "100ms", "--progress", "none", "http://"+addr+"/agent")
	if code != 1 || strings.Contains(out, "errors: none") {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "runs: 2 judged, 0 complete (0.0%), 0 with RUN_FINISHED; 2 unfinished", "since its request, without a response")
	wantLastLine(t, out, "exit 1: 2 of 2 runs failed (without --threshold, any failed run fails the load)")
}

// With thresholds, they alone decide: 5% of runs answered with HTTP 500
// pass errors<10%, and fail the load without a threshold.
func TestLoadThresholdsDecide(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%20 == 0 {
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
	defer srv.Close()
	code, out, errs := loadCmd(t, context.Background(), "-c", "2", "-n", "40", "--progress", "none", "--threshold", "errors<10%", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "ok      errors<10%: A, 2 concurrent: 5%", "http 500                2")
	wantLastLine(t, out, "exit 0: every threshold held (with --threshold, the thresholds alone decide: 2 of 40 runs failed)")
	code, out, errs = loadCmd(t, context.Background(), "-c", "2", "-n", "40", "--progress", "none", srv.URL)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	wantLastLine(t, out, "exit 1: 2 of 40 runs failed (without --threshold, any failed run fails the load)")
}

// A healthy run longer than -d and --drain allow is cut, unfinished, as a
// hung one is; the report says that --drain may be what to raise.
func TestLoadUnfinishedPointsAtDrain(t *testing.T) {
	at, _, _ := startServe(t, nil)
	code, out, errs := loadCmd(t, context.Background(), "-c", "2", "-d", "50ms", "--drain", "50ms", "--progress", "none",
		at.demo+"/agent?scenario=synthetic&events=100&rate=10")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	wantContains(t, out, "2 unfinished (in flight at the load's end: failed)\nunfinished: hung, or longer than -d and --drain allow (then raise --drain)")
}
