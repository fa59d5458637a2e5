package relay

import (
	"bufio"
	"os"

	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
	"github.com/agui-relay/agui-relay/negotiate"
)

// harness runs a test producer (net/http, so that the relay is tested
// against a server other than its own stack), the relay on a real socket,
// and a test consumer (net/http client), all on 127.0.0.1.
type harness struct {
	t        *testing.T
	producer *httptest.Server
	relay    *Relay
	url      string
	consumer *http.Client
	logs     *observer.ObservedLogs
	reports  chan *RunReport
}

func newHarness(t *testing.T, producer http.HandlerFunc, configure func(*Relay)) *harness {
	t.Helper()
	return newHarnessOn(t, producer, configure, Listener) // as serve does: consumers read and written raw
}

// newHarnessOn is newHarness whose relay serves the listener listen
// returns (Listener over the one it is given, as serve's is).
func newHarnessOn(t *testing.T, producer http.HandlerFunc, configure func(*Relay), listen func(net.Listener) net.Listener) *harness {
	t.Helper()
	h := &harness{t: t, reports: make(chan *RunReport, 16)}
	h.producer = httptest.NewServer(producer)
	t.Cleanup(func() { h.producer.CloseClientConnections(); h.producer.Close() })
	core, logs := observer.New(zapcore.DebugLevel)
	h.logs = logs
	h.relay = &Relay{
		Upstream:        h.producer.URL,
		Client:          NewClient(ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond}),
		Log:             zap.New(core),
		Poller:          testPoller(t),
		ReuseGoroutines: reusing(),
		Tap:             onEnd(nil, reportsTo(h.reports)),
	}
	// Every pause of a producer over a millisecond parks its stream, so
	// that the tests below exercise parked streams too (see stream.go).
	parkingAfter(h.relay, time.Millisecond)
	if configure != nil {
		configure(h.relay)
	}
	h.url = "http://" + testkit.Serve(t, h.relay.Server(), listen)
	t.Cleanup(h.relay.EndRuns) // a test that failed may leave a run open
	h.consumer = testkit.Consumer(t)
	return h
}

// reportsTo is an end of runs (onEnd) that sends each run's report to reports, its Counts
// left out (they are borrowed: the relay reuses them).
func reportsTo(reports chan<- *RunReport) func(*RunReport) {
	return func(rep *RunReport) { c := *rep; c.Counts = nil; reports <- &c }
}

func (h *harness) post(path, body string, header ...string) *http.Response {
	h.t.Helper()
	return testkit.Post(h.t, h.consumer, h.url+path, body, header...)
}

func (h *harness) report() *RunReport {
	h.t.Helper()
	return testkit.Await(h.t, h.reports, "no run report")
}

func TestPassThroughIsByteExact(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.Unusual)
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput)
	if got := testkit.ReadAll(t, resp); got != testkit.Unusual {
		t.Fatalf("relayed stream differs:\n got %q\nwant %q", got, testkit.Unusual)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	rep := h.report()
	if rep.Events != 8 || rep.Bytes != len(testkit.Unusual) || rep.Terminal != "RUN_FINISHED" || rep.Abort != "" || rep.Translated {
		t.Errorf("report = %+v", rep)
	}
	if rep.RunID != "r1" || rep.ThreadID != "t1" || rep.Status != 200 || rep.Producer.String() != "1.0" {
		t.Errorf("report = %+v", rep)
	}
}

// bodiesTo is a producer that sends the body of each request to got and
// answers with the headers of an event stream, and no event.
func bodiesTo(got chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		testkit.StreamHeaders(w)
	}
}

func TestForwardsInputByteExact(t *testing.T) {
	input := `{"threadId":"t\u00e9","runId":"r1","protocolVersion":"1.0","messages":[],"forwardedProps":{"n":1.000000000000000000001,"s":"\ud83d\ude00","k":[ ]},"zz":1}`
	got := make(chan string, 1)
	h := newHarness(t, bodiesTo(got), nil)
	testkit.ReadAll(t, h.post("/agent", input))
	if b := <-got; b != input {
		t.Fatalf("producer got %q, want %q", b, input)
	}
}

// The consumer sees event N before the producer sends event N+1.
func TestDeliversEachEventBeforeTheNext(t *testing.T) {
	const n = 20
	next := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		for i := 0; i < n; i++ {
			if i > 0 {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			testkit.SSE(w, fmt.Sprintf("data: {\"type\":\"CUSTOM\",\"name\":\"e%d\",\"value\":%d}\n\n", i, i))
		}
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput)
	defer resp.Body.Close()
	frames := make(chan string)
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			var frame strings.Builder
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					close(frames)
					return
				}
				frame.WriteString(line)
				if line == "\n" {
					break
				}
			}
			frames <- frame.String()
		}
	}()
	for i := 0; i < n; i++ {
		select {
		case f := <-frames:
			if want := fmt.Sprintf("\"name\":\"e%d\"", i); !strings.Contains(f, want) {
				t.Fatalf("frame %d = %q", i, f)
			}
		case <-time.After(testkit.Liveness):
			t.Fatalf("event %d did not arrive before the producer sent the next", i)
		}
		if i < n-1 {
			next <- struct{}{}
		}
	}
}

func TestFramingVariantsArriveCanonical(t *testing.T) {
	in := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\",\"protocolVersion\":\"1.0\"}\r\n\r\n" +
		"data:{\"type\":\"CUSTOM\",\"name\":\"a\",\"value\":1}\r\r" +
		"data: {\"type\":\"CUSTOM\",\ndata: \"name\":\"b\",\"value\":2}\n\n" +
		": comment\r\n\r\n" +
		"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	want := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\",\"protocolVersion\":\"1.0\"}\n\n" +
		"data: {\"type\":\"CUSTOM\",\"name\":\"a\",\"value\":1}\n\n" +
		"data: {\"type\":\"CUSTOM\",\ndata: \"name\":\"b\",\"value\":2}\n\n" +
		": comment\n\n" +
		"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		for i := 0; i < len(in); i += 7 { // odd-sized writes split frames and CRLFs
			testkit.SSE(w, in[i:min(i+7, len(in))])
		}
	}, nil)
	if got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// runGoroutines counts the goroutines that a run may leave behind: all but
// those that live as long as the process once something started them
// (fasthttp's date updater) or as long as a server keeps idle workers (a
// harness's Poller lives as long as the test, and is counted). A baseline
// taken before the first request of a test run on its own then holds
// afterwards too.
func runGoroutines() int {
	count := 0
	for _, g := range strings.Split(testkit.Stacks(), "\n\n") {
		if strings.Contains(g, "fasthttp.updateServerDate") || strings.Contains(g, "fasthttp.(*workerPool)") {
			continue
		}
		count++
	}
	return count
}

// waitGoroutines waits until runGoroutines is back to base.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	testkit.WaitFor(t, "the goroutines back to their baseline", func() bool { return runGoroutines() <= base }, func() string {
		return fmt.Sprintf("goroutines: %d, baseline %d\n%s", runGoroutines(), base, testkit.Stacks())
	})
}

// A consumer that goes away cancels the producer's request promptly, also
// while the producer is silent, and leaves no goroutine behind.
func TestConsumerGoneCancelsUpstream(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) {
			cancelled := make(chan struct{})
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				defer close(cancelled)
				testkit.StreamHeaders(w)
				testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
				for busy {
					select {
					case <-r.Context().Done():
						return
					default:
						testkit.SSE(w, `data: {"type":"CUSTOM","name":"tick","value":1}`+"\n\n")
					}
				}
				<-r.Context().Done() // silent until the relay closes the connection
			}, nil)
			base, baseFDs := runGoroutines(), openFDs(t)
			resp := h.post("/agent", testkit.MinimalInput)
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.Contains(line, "RUN_STARTED") {
				t.Fatalf("first line %q, %v", line, err)
			}
			resp.Body.Close()
			testkit.Await(t, cancelled, "the producer's request was not cancelled")
			rep := h.report()
			if rep.Abort != "consumer_gone" {
				t.Errorf("report abort = %q", rep.Abort)
			}
			h.consumer.Transport.(*http.Transport).CloseIdleConnections()
			waitGoroutines(t, base)
			waitFDs(t, baseFDs)
		})
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here") // only where /proc exists; the other checks still ran
	}
	return len(des)
}

// waitFDs waits until the open descriptors are back to base: every
// connection a run opened, to the consumer or the producer, is closed.
func waitFDs(t *testing.T, base int) {
	t.Helper()
	testkit.WaitFor(t, "the open descriptors back to their baseline", func() bool { return openFDs(t) <= base }, func() string {
		return fmt.Sprintf("open descriptors: %d, baseline %d", openFDs(t), base)
	})
}

// problemOf decodes a problem+json response.
func problemOf(t *testing.T, resp *http.Response) Problem {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("content type %q", ct)
	}
	var p Problem
	if err := json.Unmarshal([]byte(testkit.ReadAll(t, resp)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != resp.StatusCode || p.Type == "" || p.Title == "" {
		t.Errorf("problem %+v for status %d", p, resp.StatusCode)
	}
	return p
}

// wantProblem checks that resp is a problem+json response of status and type.
func wantProblem(t *testing.T, resp *http.Response, status int, typ string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if p := problemOf(t, resp); p.Type != typ {
		t.Errorf("problem %+v", p)
	}
}

func TestUnreachableProducerIs502(t *testing.T) {
	closed := testkit.ClosedURL(t)
	h := newHarness(t, nil, func(r *Relay) { r.Upstream = closed })
	resp := h.post("/agent", testkit.MinimalInput)
	wantProblem(t, resp, 502, "urn:agui-relay:upstream-unreachable")
}

func TestSilentProducerIs504(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		select { // never answers until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}, func(r *Relay) {
		r.Client = NewClient(ClientOptions{FirstByteTimeout: 20 * time.Millisecond})
	})
	defer close(release)
	resp := h.post("/agent", testkit.MinimalInput)
	wantProblem(t, resp, 504, "urn:agui-relay:upstream-timeout")
}

// The first-byte timeout bounds only the wait for the response: a stream that
// lasts longer is not cut.
func TestFirstByteTimeoutDoesNotCapTheStream(t *testing.T) {
	step := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		<-step
		testkit.SSE(w, `data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, func(r *Relay) {
		r.Client = NewClient(ClientOptions{FirstByteTimeout: 30 * time.Millisecond})
	})
	resp := h.post("/agent", testkit.MinimalInput)
	time.Sleep(100 * time.Millisecond) // longer than the first-byte timeout
	close(step)
	if got := testkit.ReadAll(t, resp); !strings.HasSuffix(got, `"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n") {
		t.Fatalf("stream %q", got)
	}
}

func TestBodyOverMaxIs413(t *testing.T) {
	contacted := false
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) { contacted = true }, func(r *Relay) { r.MaxBody = 64 })
	big := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[],"pad":"` + strings.Repeat("x", 64) + `"}`
	resp := h.post("/agent", big)
	wantProblem(t, resp, 413, "urn:agui-relay:body-too-large")
	if contacted {
		t.Error("the producer was contacted")
	}
}

func TestMalformedInputIs400(t *testing.T) {
	tests := []struct {
		body     string
		pointers []string
	}{
		{`{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[]`, []string{""}},
		{`[1,2]`, []string{""}},
		// The judge reports in document order, missing members last.
		{`{"runId":"r1","protocolVersion":"1.0","messages":{}}`, []string{"/messages", "/threadId"}},
		// Undeclared, the consumer predates the field and is judged as
		// 0.0.59, whose RunAgentInput requires tools and context: listed
		// beside what 1.0 refuses too.
		{`{"threadId":"t","runId":"r","messages":{}}`, []string{"/messages", "/tools", "/context"}},
		{`{"threadId":7,"runId":null,"messages":[],"protocolVersion":1}`, []string{"/threadId", "/runId", "/protocolVersion"}},
		{`{"threadId":"t","runId":"r","messages":[],"protocolVersion":"0.0.30"}`, []string{"/protocolVersion"}},
	}
	contacted := false
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) { contacted = true }, nil)
	for _, tc := range tests {
		resp := h.post("/agent", tc.body)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", tc.body, resp.StatusCode)
			continue
		}
		p := problemOf(t, resp)
		var ptrs []string
		for _, e := range p.Errors {
			ptrs = append(ptrs, e.Pointer)
			if e.Reason == "" {
				t.Errorf("%s: no reason for %q", tc.body, e.Pointer)
			}
		}
		if strings.Join(ptrs, " ") != strings.Join(tc.pointers, " ") {
			t.Errorf("%s: pointers %q, want %q", tc.body, ptrs, tc.pointers)
		}
	}
	if contacted {
		t.Error("the producer was contacted")
	}
}

func TestCheckInputHookDecides(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) { testkit.StreamHeaders(w) }, func(r *Relay) {
		r.CheckInput = func(_ negotiate.Version, body []byte) []InputError {
			return []InputError{{"/messages/0/role", "unknown role"}}
		}
	})
	resp := h.post("/agent", testkit.MinimalInput)
	if p := problemOf(t, resp); resp.StatusCode != 400 || len(p.Errors) != 1 || p.Errors[0].Pointer != "/messages/0/role" {
		t.Fatalf("status %d, problem %+v", resp.StatusCode, p)
	}
}

func TestProducerErrorPassesThroughUnchanged(t *testing.T) {
	body := `{"detail":"no such agent \u00e9"}`
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Producer", "yes")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(422)
		io.WriteString(w, body)
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput)
	if resp.StatusCode != 422 || resp.Header.Get("X-Producer") != "yes" || resp.Header.Get("Retry-After") != "7" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if got := testkit.ReadAll(t, resp); got != body {
		t.Errorf("body %q", got)
	}
	if rep := h.report(); rep.Status != 422 {
		t.Errorf("report %+v", rep)
	}
}

// hijacked lets a test producer write raw HTTP, to break the stream or send
// headers net/http would not.
func hijacked(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
	}
	return conn, rw
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

const streamHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"

func runErrorOf(t *testing.T, stream string) map[string]string {
	t.Helper()
	i := strings.LastIndex(stream, "data: ")
	if i < 0 || !strings.HasSuffix(stream, "\n\n") {
		t.Fatalf("stream does not end in an event: %q", stream)
	}
	var ev map[string]string
	if err := json.Unmarshal([]byte(stream[i+6:len(stream)-2]), &ev); err != nil || ev["type"] != "RUN_ERROR" {
		t.Fatalf("last event %q (%v), want a RUN_ERROR", stream[i:], err)
	}
	if !strings.HasPrefix(ev["message"], "agui-relay: ") {
		t.Errorf("message %q", ev["message"])
	}
	return ev
}

func TestBrokenStreamEndsWithRunError(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijacked(t, w)
		defer conn.Close()
		rw.WriteString(streamHeader + "\r\n")
		rw.WriteString(chunk(`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n"))
		rw.WriteString(chunk(`data: {"type":"TEXT_MESSAGE_START","mess`)) // cut mid-event
		rw.Flush()
		conn.(*net.TCPConn).SetLinger(0) // reset, not a clean close
	}, nil)
	got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if !strings.HasPrefix(got, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n") || strings.Contains(got, "TEXT_MESSAGE_START") {
		t.Fatalf("stream %q", got)
	}
	if ev := runErrorOf(t, got); ev["code"] != CodeUpstreamBroken {
		t.Errorf("RUN_ERROR %v", ev)
	}
	if rep := h.report(); rep.Abort != CodeUpstreamBroken || rep.Terminal != "RUN_ERROR" || rep.Err == nil {
		t.Errorf("report %+v", rep)
	}
}

func TestIdleProducerEndsWithRunError(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		<-r.Context().Done()
	}, func(r *Relay) { r.IdleTimeout = 30 * time.Millisecond })
	if ev := runErrorOf(t, testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))); ev["code"] != CodeUpstreamIdleTimeout {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

// The idle timeout counts from the last byte, not from the start: a
// producer that keeps sending, each pause under the timeout, is relayed to
// its end however long the whole run takes; a pause over it after that
// still ends the run.
func TestBusyProducerOutlivesTheIdleTimeout(t *testing.T) {
	// The producer sends an event every 10 ms for three idle timeouts, then
	// falls silent. Each event must reset the timer: every one sent reaches
	// the consumer before the silence ends the run. The gaps are a
	// twenty-fifth of the timeout, so a loaded machine does not stretch one
	// past it.
	const idle = 250 * time.Millisecond
	var sent atomic.Int64
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		for start := time.Now(); time.Since(start) < 3*idle; {
			time.Sleep(10 * time.Millisecond)
			testkit.SSE(w, testkit.ContentEvent)
			sent.Add(1)
		}
		<-r.Context().Done()
	}, func(r *Relay) { r.IdleTimeout = idle })
	stream := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if n, want := strings.Count(stream, `"TEXT_MESSAGE_CONTENT"`), sent.Load(); int64(n) != want || want == 0 {
		t.Errorf("%d of %d events before the idle timeout ended the run", n, want)
	}
	if ev := runErrorOf(t, stream); ev["code"] != CodeUpstreamIdleTimeout {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

func TestRunTimeoutEndsWithRunError(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
				testkit.SSE(w, ": still thinking\n\n") // keeps the idle timer from firing
			}
		}
	}, func(r *Relay) { r.RunTimeout = 50 * time.Millisecond; r.IdleTimeout = time.Minute })
	got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	// No run had started: the consumer is still owed a terminal event.
	if ev := runErrorOf(t, got); ev["code"] != CodeRunTimeout {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

func TestOversizedFrameEndsWithRunError(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
			`data: {"type":"CUSTOM","name":"big","value":"`+strings.Repeat("x", 1000)+`"}`+"\n\n")
		<-r.Context().Done()
	}, func(r *Relay) { r.MaxFrame = 200 })
	got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if strings.Contains(got, "xxxx") {
		t.Fatal("the oversized event was relayed")
	}
	if ev := runErrorOf(t, got); ev["code"] != CodeFrameTooLarge {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

// A producer that closes cleanly inside a run: what it sent is relayed,
// nothing is invented, and the relay logs it.
func TestCleanCloseInsideRunIsRelayedAsIs(t *testing.T) {
	in := `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n"
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, in)
	}, nil)
	if got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)); got != in {
		t.Fatalf("stream %q", got)
	}
	h.report()
	if n := h.logs.FilterMessageSnippet("without RUN_FINISHED or RUN_ERROR").Len(); n != 1 {
		t.Errorf("%d log lines about the missing terminal event", n)
	}
}

func TestEndRunsWritesRunError(t *testing.T) {
	started := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		close(started)
		<-r.Context().Done()
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput)
	<-started
	for h.relay.Active() == 0 {
		time.Sleep(time.Millisecond)
	}
	h.relay.EndRuns()
	if ev := runErrorOf(t, testkit.ReadAll(t, resp)); ev["code"] != CodeShutdown {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

func TestHopByHopHeadersAreNotForwarded(t *testing.T) {
	got := make(chan http.Header, 1)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		conn, rw := hijacked(t, w)
		defer conn.Close()
		rw.WriteString(streamHeader + "Connection: keep-alive, X-Resp-Hop\r\nX-Resp-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Resp-End: 2\r\n\r\n")
		rw.WriteString(chunk(`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n"))
		rw.WriteString("0\r\n\r\n")
		rw.Flush()
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput,
		"Connection", "X-Req-Hop", "X-Req-Hop", "1", "Keep-Alive", "timeout=5", "Proxy-Authorization", "Basic eA==",
		"Te", "trailers", "Upgrade", "websocket", "Authorization", "Bearer secret", "X-Req-End", "2", "Cookie", "a=b")
	hdr := <-got
	for _, k := range []string{"X-Req-Hop", "Keep-Alive", "Proxy-Authorization", "Te", "Upgrade"} {
		if v := hdr.Values(k); len(v) > 0 {
			t.Errorf("producer got hop-by-hop %s: %q", k, v)
		}
	}
	for k, want := range map[string]string{"Authorization": "Bearer secret", "X-Req-End": "2", "Cookie": "a=b",
		"Accept-Encoding": "identity", "Accept": "text/event-stream", "X-Forwarded-For": "127.0.0.1"} {
		if v := hdr.Get(k); v != want {
			t.Errorf("producer got %s: %q, want %q", k, v, want)
		}
	}
	testkit.ReadAll(t, resp)
	if resp.Header.Get("X-Resp-Hop") != "" || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("X-Resp-End") != "2" {
		t.Errorf("consumer got headers %v", resp.Header)
	}
}

func TestOtherRequestsAreProxied(t *testing.T) {
	type seen struct{ method, uri, body string }
	got := make(chan seen, 1)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, `{"capabilities":["x"]}`)
	}, func(r *Relay) { r.Upstream += "/base/" })
	resp, err := h.consumer.Get(h.url + "/agent/capabilities?x=1&y=%20")
	if err != nil {
		t.Fatal(err)
	}
	if body := testkit.ReadAll(t, resp); resp.StatusCode != 200 || body != `{"capabilities":["x"]}` || resp.Header.Get("ETag") != `"v1"` {
		t.Errorf("status %d, body %q, headers %v", resp.StatusCode, body, resp.Header)
	}
	if s := <-got; s != (seen{"GET", "/base/agent/capabilities?x=1&y=%20", ""}) {
		t.Errorf("producer saw %+v", s)
	}
	// A POST that is not JSON is proxied too, not judged.
	req, _ := http.NewRequest("POST", h.url+"/upload", strings.NewReader("a=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = h.consumer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ReadAll(t, resp)
	if s := <-got; s != (seen{"POST", "/base/upload", "a=1"}) || resp.StatusCode != 200 {
		t.Errorf("producer saw %+v, status %d", s, resp.StatusCode)
	}
}

func TestTranslateInputIsCalledForLegacyConsumers(t *testing.T) {
	got := make(chan string, 2)
	var plans []string
	var mu sync.Mutex
	h := newHarness(t, bodiesTo(got), func(r *Relay) {
		r.TranslateInput = func(plan negotiate.InputPlan, body []byte) ([]byte, error) {
			mu.Lock()
			plans = append(plans, plan.From.String()+">"+plan.To.String())
			mu.Unlock()
			return []byte(strings.Replace(string(body), `"protocolVersion":"0.0.45",`, "", 1)), nil
		}
	})
	// A 0.0.45 consumer always sends tools and context (its schema
	// requires them; the relay's judge refuses the input without them).
	legacy := `{"protocolVersion":"0.0.45","threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[]}`
	if resp := h.post("/agent", legacy); resp.StatusCode != 200 {
		t.Fatalf("legacy input answered %d: %s", resp.StatusCode, testkit.ReadAll(t, resp))
	} else {
		testkit.ReadAll(t, resp)
	}
	if b := <-got; b != `{"threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[]}` {
		t.Errorf("producer got %q", b)
	}
	testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)) // a current consumer: nothing to translate
	if b := <-got; b != testkit.MinimalInput {
		t.Errorf("producer got %q", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(plans, " ") != "0.0.45>1.0" {
		t.Errorf("plans %q", plans)
	}
}

func TestServeWithFasthttpClient(t *testing.T) {
	// The same pass-through, read by a fasthttp client, which decodes
	// chunked framing differently from net/http.
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.Unusual)
	}, nil)
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(h.url + "/agent")
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	req.SetBodyString(testkit.MinimalInput)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	c := &fasthttp.Client{}
	defer c.CloseIdleConnections() // the kept-alive connection: the harness's shutdown waits for it
	if err := c.DoTimeout(req, resp, testkit.Liveness); err != nil {
		t.Fatal(err)
	}
	if string(resp.Body()) != testkit.Unusual {
		t.Fatalf("body %q", resp.Body())
	}
}

// Without a TranslateInput hook the relay runs the translate package's
// input chain: a legacy consumer's retired binary part reaches a current
// producer as a media part, the relay declares what it now speaks, and
// forwardedProps arrives byte for byte.
func TestDefaultInputTranslation(t *testing.T) {
	got := make(chan string, 1)
	h := newHarness(t, bodiesTo(got), func(r *Relay) { r.ConsumerVersion = negotiate.MustParse("0.0.45") })
	const props = `{"k":[1,"\u00e9",null,{"z":true}] }`
	in := `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":[` +
		`{"type":"binary","mimeType":"image/png","data":"AAAA"}]}],"tools":[],"context":[],"forwardedProps":` + props + `}`
	resp := h.post("/agent", in)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, testkit.ReadAll(t, resp))
	}
	testkit.ReadAll(t, resp)
	b := <-got
	if !strings.Contains(b, `"forwardedProps":`+props) {
		t.Errorf("forwardedProps altered: %s", b)
	}
	if !strings.Contains(b, `"protocolVersion":"1.0"`) || strings.Contains(b, `"binary"`) || !strings.Contains(b, `"type":"image"`) {
		t.Errorf("producer got %s", b)
	}
}

// Activity messages never reach the producer, even when consumer and
// producer speak the same version and nothing else is translated; an input
// without them is forwarded byte for byte.
func TestActivityMessagesAreNotForwarded(t *testing.T) {
	got := make(chan string, 2)
	h := newHarness(t, bodiesTo(got), nil)
	withActivity := `{"protocolVersion":"1.0","threadId":"t1","runId":"r1","messages":[{"id":"a1","role":"activity","activityType":"plan","content":{}},{"id":"u1","role":"user","content":"hi"}]}`
	testkit.ReadAll(t, h.post("/agent", withActivity))
	if b := <-got; b != `{"protocolVersion":"1.0","threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}` {
		t.Errorf("producer got %s", b)
	}
	plain := `{"protocolVersion":"1.0","threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"activity"}] }`
	testkit.ReadAll(t, h.post("/agent", plain))
	if b := <-got; b != plain {
		t.Errorf("producer got %s", b)
	}
}

// readInput's own verdicts: an object after blanks passes, any other
// valid JSON value is not an object, and invalid JSON says so first.
func TestReadInput(t *testing.T) {
	for _, tc := range []struct{ body, reason string }{
		{" \t\r\n{\"threadId\":\"t\"}", ""},
		{`{}`, ""},
		{` [ {} ] `, "not a JSON object"},
		{`"{"`, "not a JSON object"},
		{`7`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{``, "not valid JSON"},
		{`   `, "not valid JSON"},
		{`{`, "not valid JSON"},
	} {
		_, errs := readInput([]byte(tc.body))
		got := ""
		if len(errs) > 0 {
			got = errs[0].Reason
		}
		if got != tc.reason {
			t.Errorf("%q: %q, want %q", tc.body, got, tc.reason)
		}
	}
}

// A run is a POST of JSON, whatever the media type's case, or of a body
// with no type at all.
func TestIsRun(t *testing.T) {
	for _, tc := range []struct {
		method, ct, body string
		want             bool
	}{
		{"POST", "application/json", "{}", true},
		{"POST", " Application/JSON ; charset=utf-8", "{}", true},
		{"POST", "application/vnd.agui+JSON", "{}", true},
		{"POST", "text/plain", "{}", false},
		{"POST", "application/jsonl", "{}", false},
		{"POST", "", "{}", true},
		{"POST", "", "", false},
		{"GET", "application/json", "", false},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(tc.method)
		if tc.ct != "" {
			ctx.Request.Header.Set("Content-Type", tc.ct)
		}
		ctx.Request.SetBodyString(tc.body)
		if got := isRun(&ctx); got != tc.want {
			t.Errorf("%s %q %q: %v, want %v", tc.method, tc.ct, tc.body, got, tc.want)
		}
	}
}

// X-Forwarded-For names the consumer's address after any the request
// brought, IPv4 as IPv4 even on a dual-stack socket, IPv6 with its zone.
func TestSetForwardedFor(t *testing.T) {
	for _, tc := range []struct {
		addr  net.Addr
		prior string
		want  string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}, "", "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7").To4(), Port: 4000}, "198.51.100.1", "198.51.100.1, 192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 4000, Zone: "eth0"}, "", "fe80::1%eth0"},
		{&net.UnixAddr{Name: "@relay", Net: "unix"}, "198.51.100.1", "198.51.100.1"},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, tc.addr, nil)
		var dst fasthttp.RequestHeader
		if tc.prior != "" {
			dst.Set("X-Forwarded-For", tc.prior)
		}
		setForwarded(&dst, &ctx)
		if got := string(dst.Peek("X-Forwarded-For")); got != tc.want {
			t.Errorf("%v after %q: %q, want %q", tc.addr, tc.prior, got, tc.want)
		}
	}
}

// The run's end holds without an idle timeout, and a run whose time was
// over before the producer responded ends as soon as its stream starts.
func TestRunTimeoutWithoutIdleTimeout(t *testing.T) {
	for _, late := range []time.Duration{0, 60 * time.Millisecond} {
		h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(late)
			testkit.StreamHeaders(w)
			testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
			<-r.Context().Done()
		}, func(r *Relay) { r.RunTimeout = 30 * time.Millisecond; r.IdleTimeout = 0 })
		got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
		if ev := runErrorOf(t, got); ev["code"] != CodeRunTimeout {
			t.Errorf("response %v late: RUN_ERROR %v", late, ev)
		}
		// The abort is the whole story: the read the timer interrupted
		// reports no error of its own (it did: "i/o timeout").
		if rep := h.report(); rep.Abort != CodeRunTimeout || rep.Err != nil {
			t.Errorf("response %v late: report abort %q, error %v", late, rep.Abort, rep.Err)
		}
	}
}

// testPoller returns a Poller, as serve gives every Relay, closed when the
// test ends (after the servers that use it: cleanups run last first).
func testPoller(tb testing.TB) *Poller {
	p := NewPoller()
	tb.Cleanup(func() { p.Close() })
	return p
}

// wirePoller is testPoller's wire.Poller, for the tests of what the relay
// asks of it.
func wirePoller(tb testing.TB) *wire.Poller { return testPoller(tb).w }

// A version declared in-band that is newer than the relay's (or that it
// cannot interpret) is served as newer, and warned about once per run on
// each side: the spec's rule ("proceed, and SHOULD warn").
func TestNewerDeclarationsAreServedWithOneWarningPerRun(t *testing.T) {
	stream := `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"99.0"}` + "\n\n" +
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n"
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, stream)
	}, nil)
	for run := 1; run <= 2; run++ {
		resp := h.post("/agent", `{"threadId":"t1","runId":"r1","protocolVersion":"99.0","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)
		if got := testkit.ReadAll(t, resp); got != stream {
			t.Fatalf("run %d: stream %q, want it relayed as is", run, got)
		}
		if rep := h.report(); rep.Consumer != negotiate.Current || rep.ConsumerLearnt != negotiate.Declared {
			t.Errorf("run %d: consumer %s (%s), want 1.0 (declared)", run, rep.Consumer, rep.ConsumerLearnt)
		}
		for _, msg := range []string{
			"consumer declared protocol version 99.0, newer than the relay's 1.0",
			"producer speaks protocol 99.0, newer than the relay's 1.0",
		} {
			if n := h.logs.FilterMessageSnippet(msg).FilterLevelExact(zapcore.WarnLevel).Len(); n != run {
				t.Errorf("after run %d: %d warnings %q, want %d", run, n, msg, run)
			}
		}
	}
}
