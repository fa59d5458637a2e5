package load_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/testkit"
)

// records collects a load's run records.
type records struct {
	mu   sync.Mutex
	recs []load.RunRecord
}

func (r *records) add(rec load.RunRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *records) of(kind string) []load.RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []load.RunRecord
	for _, rec := range r.recs {
		if rec.Kind == kind {
			out = append(out, rec)
		}
	}
	return out
}

// A run that hangs is a failed run: every 10th run of this agent stops
// after RUN_STARTED and holds its connection; those still in flight when
// the drain ends are judged, failed and unfinished, with their silence.
func TestRunsInFlightAtTheDrainsEndFail(t *testing.T) {
	var n atomic.Int64
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 1 { // the first run hangs, and every 10th after it
			sse(w, started)
			<-r.Context().Done()
			return
		}
		sse(w, started, finished)
	})
	var recs records
	drain := 200 * time.Millisecond
	res := run(t, load.Config{URL: url, Concurrency: 4, Duration: 300 * time.Millisecond, Drain: drain, Record: recs.add})
	if res.Unfinished < 1 || res.Errors[load.KindUnfinished] != res.Unfinished || res.Interrupted != 0 ||
		res.Complete != res.Runs-res.Unfinished || res.Failed() != res.Unfinished || res.Completeness() == 1 {
		t.Fatalf("runs %d complete %d unfinished %d interrupted %d errors %v", res.Runs, res.Complete, res.Unfinished, res.Interrupted, res.Errors)
	}
	if ex := res.Examples[load.KindUnfinished]; !strings.Contains(ex, "still in flight when the drain ended, silent for ") || !strings.HasSuffix(ex, "since its last read, after 1 event") {
		t.Errorf("example %q", ex)
	}
	// A run that never ended has no whole run's time; its first event did
	// come.
	if s := res.Summary(load.Whole); s.N != res.Complete {
		t.Errorf("%d whole runs timed, %d complete", s.N, res.Complete)
	}
	if s := res.Summary(load.FirstEvent); s.N != res.Runs {
		t.Errorf("%d first events timed, %d runs", s.N, res.Runs)
	}
	un := recs.of(load.KindUnfinished)
	if int64(len(un)) != res.Unfinished {
		t.Fatalf("%d unfinished records, %d unfinished runs", len(un), res.Unfinished)
	}
	longest := 0.0
	for _, rec := range un {
		if rec.Run != 0 || rec.Cut || rec.FirstEvent <= 0 || rec.Silent <= 0 {
			t.Errorf("record %+v", rec)
		}
		longest = max(longest, rec.Silent)
	}
	// The first run hung before the duration's end: silent for the drain
	// at least.
	if longest < float64(drain.Milliseconds()) {
		t.Errorf("longest silence %.1f ms, the drain %v", longest, drain)
	}
}

// An agent that accepts connections and never answers: every run fails,
// none passes unseen.
func TestAnAgentThatNeverAnswersFails(t *testing.T) {
	// It reads the requests and never responds, until the load closes the
	// connection.
	addr := testkit.AcceptEach(t, func(c net.Conn) { io.Copy(io.Discard, c) }) //nolint:errcheck
	res := run(t, load.Config{URL: "http://" + addr + "/agent", Concurrency: 2, Duration: 100 * time.Millisecond, Drain: 100 * time.Millisecond})
	if res.Runs != 2 || res.Complete != 0 || res.Unfinished != 2 || res.Errors[load.KindUnfinished] != 2 {
		t.Fatalf("runs %d complete %d unfinished %d errors %v", res.Runs, res.Complete, res.Unfinished, res.Errors)
	}
	if ex := res.Examples[load.KindUnfinished]; !strings.Contains(ex, "since its request, without a response") {
		t.Errorf("example %q", ex)
	}
}

// A load of -n runs whose context ends (Ctrl-C) fails its runs in flight
// too, saying so.
func TestRunsInFlightWhenTheContextEndsFail(t *testing.T) {
	arrived := make(chan struct{}, 8)
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started)
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := load.Start(ctx, load.Config{URL: url, Concurrency: 2, Runs: 10, Timeouts: load.DefaultTimeouts})
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	<-arrived
	cancel()
	res := r.Wait()
	if res.Runs != 2 || res.Unfinished != 2 || res.Complete != 0 || !res.Stopped || res.Interrupted != 0 {
		t.Fatalf("runs %d unfinished %d complete %d stopped %v interrupted %d", res.Runs, res.Unfinished, res.Complete, res.Stopped, res.Interrupted)
	}
	if ex := res.Examples[load.KindUnfinished]; !strings.Contains(ex, "still in flight when the load was interrupted") {
		t.Errorf("example %q", ex)
	}
}
