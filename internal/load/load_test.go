package load_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/demo"
	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
	"github.com/agui-relay/agui-relay/internal/testkit"
)

// startDemo serves the demo agent on a free port until the test ends.
func startDemo(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &demo.Agent{Recordings: demo.Recordings()}
	srv := &fasthttp.Server{Handler: a.Handle}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func run(t *testing.T, cfg load.Config) *load.Result {
	t.Helper()
	if cfg.Timeouts == (load.Timeouts{}) {
		cfg.Timeouts = load.Timeouts{Connect: 5 * time.Second, Headers: 10 * time.Second, Idle: 10 * time.Second, Run: time.Minute}
	}
	if cfg.JudgeEvery == 0 {
		cfg.JudgeEvery = 1
	}
	res, err := load.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestLoadAgainstTheDemoAgentsSyntheticScenario(t *testing.T) {
	url := startDemo(t) + "/agent?scenario=synthetic&events=300"
	res := run(t, load.Config{URL: url, Concurrency: 4, Runs: 40})
	plan := synth.NewPlan(synth.Dialect10, 300)
	if res.Runs != 40 || res.Complete != 40 || res.Finished != 40 || res.Interrupted != 0 || len(res.Errors) != 0 {
		t.Fatalf("runs %d complete %d finished %d interrupted %d errors %v %v", res.Runs, res.Complete, res.Finished, res.Interrupted, res.Errors, res.Examples)
	}
	if want := int64(40 * len(plan.Kinds)); res.Events != want || res.Judged != want || res.Malformed != 0 {
		t.Errorf("events %d judged %d malformed %d, want %d", res.Events, res.Judged, res.Malformed, want)
	}
	for _, tm := range []load.Timing{load.Headers, load.FirstEvent, load.FirstContent, load.Whole} {
		if s := res.Summary(tm); s.N != 40 || s.P50 > s.P99 || s.P99 > s.Max {
			t.Errorf("%s: %+v", tm, s)
		}
	}
	if s := res.Summary(load.Gap); s.N != res.Events-40 {
		t.Errorf("gaps %d, want %d", s.N, res.Events-40)
	}
	var bytes int64
	for _, p := range res.Series {
		bytes += p.Bytes
	}
	if bytes != res.Bytes {
		t.Errorf("the series' bytes add up to %d, the total is %d", bytes, res.Bytes)
	}
	if res.Completeness() != 1 || res.EventsSec <= 0 || res.BytesSec <= 0 || res.RunsSec <= 0 || len(res.Series) == 0 {
		t.Errorf("%+v", res)
	}
}

// agent is a test producer: handle answers each run.
func agent(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(handle))
	t.Cleanup(srv.Close)
	return srv.URL
}

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

const (
	started  = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
	finished = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
)

func TestLoadCountsErrorsByKind(t *testing.T) {
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/agent"
	}()
	tests := []struct {
		name    string
		url     string
		kind    string
		example string
	}{
		{"refused", refused, load.KindRefused, "refused"},
		{"HTTP status", agent(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no such agent", 503)
		}), "http 503", "http 503: no such agent"},
		{"not SSE", agent(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"hello":"world"}`)
		}), load.KindNotSSE, `Content-Type "application/json", not text/event-stream`},
		{"RUN_ERROR", agent(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, started, `{"type":"RUN_ERROR","message":"the model is down","code":"model_down"}`)
		}), "RUN_ERROR model_down", "RUN_ERROR model_down: the model is down"},
		{"no terminal", agent(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, started, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`)
		}), load.KindCut, "after 2 events without RUN_FINISHED"},
		{"out of order", agent(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, started, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`, finished)
		}), load.KindOrder, "#1 TEXT_MESSAGE_CONTENT: message-not-started"},
		{"malformed", agent(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, started, `{"type":"TEXT_MESSAGE_CONTENT","delta":"hi"}`, finished)
		}), load.KindMalformed, "TEXT_MESSAGE_CONTENT /messageId: required"},
		{"broken", agent(t, func(w http.ResponseWriter, r *http.Request) {
			sse(w, started)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}), load.KindBroken, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, load.Config{URL: tc.url, Concurrency: 2, Runs: 6})
			if res.Runs != 6 || res.Errors[tc.kind] != 6 || res.Complete != 0 {
				t.Fatalf("runs %d complete %d errors %v %v", res.Runs, res.Complete, res.Errors, res.Examples)
			}
			if !strings.Contains(res.Examples[tc.kind], tc.example) {
				t.Errorf("example %q lacks %q", res.Examples[tc.kind], tc.example)
			}
			if strings.HasPrefix(tc.kind, "http ") && strings.Count(res.Examples[tc.kind], tc.kind[5:]) != 1 {
				t.Errorf("example %q names the status more than once", res.Examples[tc.kind])
			}
		})
	}
}

// A producer silent past a timeout is a timeout of that phase, and the
// load ends.
func TestLoadTimeouts(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	silentHead := agent(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	silentBody := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	for _, tc := range []struct {
		url  string
		to   load.Timeouts
		kind string
	}{
		{silentHead, load.Timeouts{Headers: 50 * time.Millisecond}, load.KindTimeoutHeaders},
		{silentBody, load.Timeouts{Idle: 50 * time.Millisecond}, load.KindTimeoutIdle},
		{silentBody, load.Timeouts{Run: 80 * time.Millisecond}, load.KindTimeoutRun},
	} {
		res := run(t, load.Config{URL: tc.url, Concurrency: 2, Runs: 2, Timeouts: tc.to})
		if res.Errors[tc.kind] != 2 {
			t.Errorf("%s: errors %v %v", tc.kind, res.Errors, res.Examples)
		}
	}
}

// Inputs are taken in turn, every run with ids of its own, and the
// headers go with every run.
func TestLoadInputsInTurnWithFreshIDs(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	ids := map[string]bool{}
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ThreadID string `json:"threadId"`
			RunID    string `json:"runId"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		seen[in.Messages[0].Content+" "+r.Header.Get("Authorization")]++
		ids[in.ThreadID] = true
		ids[in.RunID] = true
		mu.Unlock()
		sse(w, started, finished)
	})
	in := func(s string) []byte {
		return []byte(`{"threadId":"x","runId":"x","messages":[{"id":"u","role":"user","content":"` + s + `"}],"tools":[],"context":[],"state":{},"forwardedProps":{},"protocolVersion":"1.0"}`)
	}
	res := run(t, load.Config{URL: url, Concurrency: 3, Runs: 30, Inputs: [][]byte{in("a"), in("b")},
		Headers: []load.Header{{Name: "Authorization", Value: "Bearer k"}}})
	if res.Complete != 30 {
		t.Fatalf("%+v", res)
	}
	if seen["a Bearer k"] != 15 || seen["b Bearer k"] != 15 || len(ids) != 60 {
		t.Errorf("inputs %v, %d distinct ids", seen, len(ids))
	}
}

// Stop cuts the runs in flight: they are not judged, and nothing of the
// load is left running.
func TestStopCutsRunsInFlight(t *testing.T) {
	before := runtime.NumGoroutine()
	arrived := make(chan struct{}, 8)
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started)
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	r, err := load.Start(context.Background(), load.Config{URL: url, Concurrency: 4, Timeouts: load.DefaultTimeouts})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		<-arrived
	}
	r.Stop()
	res := r.Wait()
	if res.Runs != 0 || res.Interrupted != 4 || !res.Stopped || len(res.Errors) != 0 {
		t.Errorf("runs %d interrupted %d stopped %v errors %v", res.Runs, res.Interrupted, res.Stopped, res.Errors)
	}
	http.DefaultClient.CloseIdleConnections()
	// Three are the test servers' own.
	testkit.WaitFor(t, "the load's goroutines ended", func() bool { return runtime.NumGoroutine() <= before+3 }, func() string {
		return fmt.Sprintf("%d goroutines, %d before", runtime.NumGoroutine(), before)
	})
}

// A cut run is not judged: its events read so far count as events, but
// none as judged, and its gaps are not in the histogram.
func TestCutRunsAreNotJudged(t *testing.T) {
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`)
		sse(w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`)
		sse(w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"b"}`)
		<-r.Context().Done()
	})
	r, err := load.Start(context.Background(), load.Config{URL: url, Concurrency: 2, JudgeEvery: 1, Timeouts: load.DefaultTimeouts})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "both runs' events read", func() bool { return r.Progress().Events == 8 }, func() string {
		return fmt.Sprintf("%+v", r.Progress())
	})
	r.Stop()
	res := r.Wait()
	if res.Interrupted != 2 || res.Events != 8 || res.Judged != 0 || res.Summary(load.Gap).N != 0 || res.Summary(load.FirstEvent).N != 0 {
		t.Errorf("interrupted %d events %d judged %d gaps %d first events %d", res.Interrupted, res.Events, res.Judged,
			res.Summary(load.Gap).N, res.Summary(load.FirstEvent).N)
	}
}

// The time series counts what the totals count: the first event and the
// first content of judged runs only, not those of runs cut by the end of
// the load, and every judged run, however short the last interval.
func TestSeriesAgreesWithTheTotals(t *testing.T) {
	var requests atomic.Int64
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`)
		if requests.Add(1) == 1 {
			sse(w, `{"type":"TEXT_MESSAGE_END","messageId":"m"}`, finished)
			return
		}
		<-r.Context().Done()
	})
	r, err := load.Start(context.Background(), load.Config{URL: url, Concurrency: 2, JudgeEvery: 1, Timeouts: load.DefaultTimeouts, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// One run judged (5 events), two cut after 3 events each.
	testkit.WaitFor(t, "the runs' events read", func() bool { return r.Progress().Events == 11 }, func() string {
		return fmt.Sprintf("%+v", r.Progress())
	})
	r.Stop()
	res := r.Wait()
	var runs, first, content int64
	for _, p := range res.Series {
		runs += p.Runs
		first += p.FirstEvent.N
		content += p.FirstContent.N
	}
	if res.Runs != 1 || res.Interrupted != 2 || res.Summary(load.FirstEvent).N != 1 || res.Summary(load.FirstContent).N != 1 ||
		runs != 1 || first != 1 || content != 1 {
		t.Errorf("runs %d (series %d), interrupted %d, first events %d (series %d), first contents %d (series %d)", res.Runs, runs,
			res.Interrupted, res.Summary(load.FirstEvent).N, first, res.Summary(load.FirstContent).N, content)
	}
}

// A run that ends just after an interval's sample, in a last interval too
// short to be a point of its own, counts in the point before, and the last
// progress's rates are the point's: runs/s as events/s (it divided the
// runs by the last interval's few milliseconds: 500 times too many).
func TestSeriesKeepsTheLastShortInterval(t *testing.T) {
	release := make(chan struct{})
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started)
		<-release
		sse(w, finished)
	})
	var once sync.Once
	var last load.Progress
	// The run ends as the first progress is shown, and must within a tenth
	// of the interval to be part of its point: an interval of a second
	// leaves a busy machine 100 ms (at 200 ms, 20 ms were missed under load).
	cfg := load.Config{URL: url, Concurrency: 1, Runs: 1, Interval: time.Second, Timeouts: load.DefaultTimeouts}
	cfg.Progress = func(p load.Progress) {
		last = p
		once.Do(func() { close(release) })
	}
	res := run(t, cfg)
	if len(res.Series) != 1 || res.Series[0].Runs != 1 || res.Series[0].Events != 2 || res.Series[0].FirstEvent.N != 1 ||
		res.Series[0].At != res.Seconds {
		t.Fatalf("series %+v, the load's %vs", res.Series, res.Seconds)
	}
	p := res.Series[0]
	if want := float64(p.Runs) / p.At; math.Abs(last.RunsSec-want) > 1e-9*want || last.EventsPerSec != p.EventsPerSec {
		t.Errorf("last progress %.1f runs/s, %.1f events/s; the point's %.1f runs/s, %.1f events/s", last.RunsSec, last.EventsPerSec, want, p.EventsPerSec)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  load.Config
		want string
	}{
		{load.Config{URL: "localhost:8080", Concurrency: 1}, "not an http:// or https:// URL"},
		{load.Config{URL: "http://x/", Concurrency: 0}, "concurrency"},
		{load.Config{URL: "http://x/", Concurrency: 1, Inputs: [][]byte{[]byte(`[1]`)}}, "input 1: not a JSON object"},
		{load.Config{URL: "http://x/", Concurrency: 1, Inputs: [][]byte{[]byte(`{"threadId":"t","runId":"r","messages":{}}`)}}, "input 1: malformed for AG-UI 1.0 at /messages"},
		{load.Config{URL: "http://x/", Concurrency: 1, Headers: []load.Header{{Name: "Content-Length", Value: "3"}}}, "set by the load generator"},
	} {
		_, err := load.Start(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// The ramp holds a slot back until its share of the ramp has passed, and
// the load's end does not wait for it: with a ramp of an hour the second
// slot never starts, and the load ends when the first has made every run.
func TestRampHoldsSlotsBack(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		sse(w, started, finished)
	})
	res := run(t, load.Config{URL: url, Concurrency: 2, Runs: 5, Ramp: time.Hour})
	if res.Complete != 5 || len(conns) != 1 {
		t.Errorf("complete %d over %d connections", res.Complete, len(conns))
	}
}

// The rate holds every run after the first until its time: at one run in
// a thousand seconds, three slots make one run, and Stop ends the wait.
func TestRateCapsNewRuns(t *testing.T) {
	done := make(chan struct{}, 4)
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started, finished)
		done <- struct{}{}
	})
	r, err := load.Start(context.Background(), load.Config{URL: url, Concurrency: 3, Rate: 0.001, Timeouts: load.DefaultTimeouts})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	for r.Progress().Done == 0 { // the run's own bookkeeping, after its last byte
		runtime.Gosched()
	}
	r.Stop()
	res := r.Wait()
	if res.Runs != 1 || res.Complete != 1 || res.Interrupted != 0 {
		t.Errorf("runs %d complete %d interrupted %d", res.Runs, res.Complete, res.Interrupted)
	}
}

// An https endpoint: its certificate is verified unless the TLS
// configuration says otherwise, and a failed verification is its own kind.
func TestLoadOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sse(w, started, finished) }))
	defer srv.Close()
	res := run(t, load.Config{URL: srv.URL, Concurrency: 2, Runs: 4})
	if res.Errors[load.KindTLS] != 4 || !strings.Contains(res.Examples[load.KindTLS], "certificate") {
		t.Errorf("unverified: %v %v", res.Errors, res.Examples)
	}
	res = run(t, load.Config{URL: srv.URL, Concurrency: 2, Runs: 4, TLS: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}})
	if res.Complete != 4 {
		t.Errorf("verified: complete %d, %v %v", res.Complete, res.Errors, res.Examples)
	}
}

// A producer whose lines end in CRLF (sse-starlette's default) is read as
// well as one that writes LF.
func TestLoadReadsCRLFStreams(t *testing.T) {
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, e := range []string{started, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m"}`, finished} {
			fmt.Fprintf(w, "data: %s\r\n\r\n", e)
			w.(http.Flusher).Flush()
		}
	})
	res := run(t, load.Config{URL: url, Concurrency: 2, Runs: 6})
	if res.Complete != 6 || res.Events != 30 || res.Malformed != 0 || res.Summary(load.FirstContent).N != 6 {
		t.Errorf("complete %d events %d malformed %d: %v %v", res.Complete, res.Events, res.Malformed, res.Errors, res.Examples)
	}
}

// Answers the client reads on one kept connection are cut where each body
// ends, whether chunked (with a trailer) or by Content-Length, even when
// the next answer came in the same write: each run gets its own events,
// and the connection serves them all.
func TestClientReadsKeptAnswersWhereTheirBodiesEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ev := func(typ string) string { return `data: {"type":"` + typ + `"}` + "\n\n" }
	first, second, third := ev("A")+ev("B"), ev("C"), ev("D")+ev("E")
	answers := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n", len(first), first) +
		fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(second), second) +
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(third), third)
	accepted := make(chan int, 1)
	go func() {
		n := 0
		defer func() { accepted <- n }()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n++
			go func() {
				defer conn.Close()
				buf := make([]byte, 64<<10)
				conn.Read(buf)              //nolint:errcheck // the first request
				conn.Write([]byte(answers)) //nolint:errcheck // all three answers at once
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	c, err := load.NewClient("http://"+ln.Addr().String()+"/run", nil, load.Timeouts{Connect: 5 * time.Second, Idle: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{first, second, third} {
		var got strings.Builder
		if err := c.Run(context.Background(), []byte(`{}`), func(load.Response) {}, func(p []byte) { got.Write(p) }); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got.String() != want {
			t.Fatalf("run %d read %q, want %q", i, got.String(), want)
		}
	}
	c.Close()
	ln.Close()
	if n := <-accepted; n != 1 {
		t.Errorf("%d connections for three runs, want one kept", n)
	}
}

// Every run's record goes to Config.Record; a producer that answers with
// fixed ids rather than the posted ones is counted; the histograms hold
// every value.
func TestRunRecordsIDsAndHistograms(t *testing.T) {
	echo := agent(t, func(w http.ResponseWriter, r *http.Request) {
		var in struct{ ThreadID, RunID string }
		json.NewDecoder(r.Body).Decode(&in)
		sse(w, fmt.Sprintf(`{"type":"RUN_STARTED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID), finished)
	})
	fixed := agent(t, func(w http.ResponseWriter, r *http.Request) { sse(w, started, finished) })
	for _, tc := range []struct {
		url     string
		ignored int64
	}{{echo, 0}, {fixed, 5}} {
		var mu sync.Mutex
		var recs []load.RunRecord
		res := run(t, load.Config{URL: tc.url, Concurrency: 2, Runs: 5, Record: func(r load.RunRecord) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		}})
		if res.Complete != 5 || res.IDsIgnored != tc.ignored || (tc.ignored > 0) != strings.Contains(res.IDsExample, `RUN_STARTED said "t" and "r"`) {
			t.Errorf("complete %d, ids ignored %d (%q), want %d", res.Complete, res.IDsIgnored, res.IDsExample, tc.ignored)
		}
		if len(recs) != 5 {
			t.Fatalf("%d records", len(recs))
		}
		for _, r := range recs {
			if r.Status != 200 || r.Events != 2 || r.Kind != "" || r.FirstEvent <= 0 || r.Run < r.FirstEvent || r.IDsIgnored != (tc.ignored > 0) {
				t.Errorf("%+v", r)
			}
		}
		var n int64
		for _, b := range res.Summary(load.Whole).Histogram {
			n += b.Count
		}
		if n != 5 {
			t.Errorf("the run histogram holds %d of 5: %+v", n, res.Summary(load.Whole).Histogram)
		}
	}
}

// A rate the slots cannot keep is told by the rate runs started at: one
// slot cannot start a billion runs a second.
func TestStartRateBelowTheRate(t *testing.T) {
	url := agent(t, func(w http.ResponseWriter, r *http.Request) { sse(w, started, finished) })
	res := run(t, load.Config{URL: url, Concurrency: 1, Runs: 3, Rate: 1e9})
	if res.Rate != 1e9 || res.StartRate <= 0 || res.StartRate > 1e8 {
		t.Errorf("rate %v, started at %v a second", res.Rate, res.StartRate)
	}
}

// The time series groups the time to first event by when it came, not by
// when its run ended: a run whose first event came two intervals before
// its end counts in the earlier interval.
func TestSeriesGroupsFirstEventsByWhenTheyCame(t *testing.T) {
	release := make(chan struct{})
	url := agent(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, started)
		<-release
		sse(w, finished)
	})
	seen := 0
	var once sync.Once
	cfg := load.Config{URL: url, Concurrency: 1, Runs: 1, Interval: time.Millisecond, Timeouts: load.DefaultTimeouts}
	cfg.Progress = func(p load.Progress) {
		if p.Events >= 1 {
			if seen++; seen == 2 { // the first event is in a sample by now
				once.Do(func() { close(release) })
			}
		}
	}
	res := run(t, cfg)
	first, end := -1.0, -1.0
	for _, p := range res.Series {
		if p.FirstEvent.N == 1 {
			first = p.At
		}
		if p.Runs == 1 {
			end = p.At
		}
	}
	if first < 0 || end < 0 || first >= end {
		t.Errorf("first event in the interval ending at %vs, the run's end at %vs", first, end)
	}
}

// A load of -n runs at a rate runs them all: a slot that finds every run
// handed out ends the wait of slots that hold none, not of those that
// wait for their turn of the rate with a run (the first run's slot found
// none left while the others waited, and they dropped theirs).
func TestEveryRunOfARateRuns(t *testing.T) {
	url := agent(t, func(w http.ResponseWriter, r *http.Request) { sse(w, started, finished) })
	res := run(t, load.Config{URL: url, Concurrency: 3, Runs: 3, Rate: 4, Timeouts: load.DefaultTimeouts})
	if res.Runs != 3 || res.Complete != 3 {
		t.Errorf("%d runs, %d complete, want 3 of 3", res.Runs, res.Complete)
	}
}
