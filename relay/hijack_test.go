package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/valyala/fasthttp"
)

// streamingProducer answers every run with the given frames, each flushed
// on its own, and a header the relay passes on and one it must drop.
func streamingProducer(frames ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Custom", "v")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "dropped")
		testkit.StreamHeaders(w)
		testkit.SSE(w, frames...)
	}
}

// runRequest is a run as a consumer sends it on the wire, with extra
// header lines.
func runRequest(proto string, header ...string) string {
	extra := ""
	for _, h := range header {
		extra += h + "\r\n"
	}
	return fmt.Sprintf("POST /agent %s\r\nHost: relay\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", proto, extra, len(testkit.MinimalInput), testkit.MinimalInput)
}

var dateLine = regexp.MustCompile(`\r\nDate: [^\r]+\r\n`)

// The stream's response, read off the socket: exactly the headers the
// server's own streaming answered before the relay took the connection over
// (one Date, the producer's end-to-end headers, no hop-by-hop ones), then
// one chunk per flush and the last chunk, then the end of the connection
// (the consumer asked for it to close).
func TestStreamResponseOnTheWire(t *testing.T) {
	h := newHarness(t, streamingProducer(testkit.RunStarted, testkit.ContentEvent, testkit.RunFinished), nil)
	got := rawExchange(t, strings.TrimPrefix(h.url, "http://"), runRequest("HTTP/1.1", "Connection: close"))
	if n := len(dateLine.FindAllString(got, -1)); n != 1 {
		t.Fatalf("%d Date headers in %q", n, got)
	}
	got = dateLine.ReplaceAllString(got, "\r\nDate: *\r\n")
	header := "HTTP/1.1 200 OK\r\nDate: *\r\nContent-Type: text/event-stream\r\nX-Custom: v\r\nCache-Control: no-cache\r\n" +
		"X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	if !strings.HasPrefix(got, header) {
		t.Fatalf("response header:\n got %q\nwant %q", got[:min(len(got), len(header)+40)], header)
	}
	// The producer flushed every frame on its own; the relay may have read
	// some together: every chunk must hold whole frames, in order.
	body := got[len(header):]
	var events strings.Builder
	chunks := 0
	for {
		line, rest, ok := strings.Cut(body, "\r\n")
		if !ok {
			t.Fatalf("no chunk size line in %q", body)
		}
		var n int
		if _, err := fmt.Sscanf(line, "%x", &n); err != nil || fmt.Sprintf("%x", n) != line {
			t.Fatalf("chunk size line %q", line)
		}
		if n == 0 {
			if rest != "\r\n" {
				t.Fatalf("after the last chunk: %q", rest)
			}
			break
		}
		if len(rest) < n+2 || rest[n:n+2] != "\r\n" {
			t.Fatalf("chunk of %d bytes in %q", n, rest)
		}
		chunk := rest[:n]
		if !strings.HasPrefix(chunk, "data: ") || !strings.HasSuffix(chunk, "\n\n") {
			t.Errorf("chunk %d does not hold whole frames: %q", chunks, chunk)
		}
		events.WriteString(chunk)
		chunks++
		body = rest[n+2:]
	}
	if events.String() != testkit.RunStarted+testkit.ContentEvent+testkit.RunFinished {
		t.Errorf("events %q", events.String())
	}
	if rep := h.report(); rep.Events != 3 || rep.Abort != "" || rep.Status != 200 {
		t.Errorf("report %+v", rep)
	}
}

// The same response read by net/http: chunked, kept alive, headers as
// above; the client's next run goes on the same connection.
func TestStreamResponseReadByNetHTTP(t *testing.T) {
	h := newHarness(t, streamingProducer(testkit.RunStarted, testkit.ContentEvent, testkit.RunFinished), nil)
	var mu sync.Mutex
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		mu.Lock()
		reused = append(reused, i.Reused)
		mu.Unlock()
	}}
	for range 2 {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", h.url+"/agent", strings.NewReader(testkit.MinimalInput))
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.consumer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		checkStreamResponse(t, resp)
		h.report()
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(reused) != "[false true]" {
		t.Errorf("connections reused: %v, want the second run on the first run's connection", reused)
	}
}

func checkStreamResponse(t *testing.T, resp *http.Response) {
	t.Helper()
	body := testkit.ReadAll(t, resp)
	if resp.StatusCode != 200 || !slicesEqual(resp.TransferEncoding, []string{"chunked"}) || resp.Close ||
		resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" ||
		resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("X-Custom") != "v" ||
		resp.Header.Get("X-Hop") != "" || len(resp.Header.Values("Date")) != 1 {
		t.Errorf("response %d %v close=%v %v", resp.StatusCode, resp.TransferEncoding, resp.Close, resp.Header)
	}
	if body != testkit.RunStarted+testkit.ContentEvent+testkit.RunFinished {
		t.Errorf("body %q", body)
	}
}

// A header rendered for keep-alive and given Connection: close afterwards
// is the header rendered without keep-alive, byte for byte.
func TestWithCloseMatchesTheRenderedHeader(t *testing.T) {
	var h fasthttp.ResponseHeader
	h.SetContentType("text/event-stream")
	h.Set("X-Custom", "v")
	h.Set(fasthttp.HeaderCacheControl, "no-cache")
	keep := responseHeader(&h, true, true, nil)
	closed := responseHeader(&h, true, false, nil)
	if got := withClose(keep); string(got) != string(closed) || strings.Contains(string(keep), "Connection") {
		t.Errorf("withClose(%q)\n = %q\nwant %q", keep, got, closed)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// An HTTP/1.0 consumer cannot read chunks: its stream is delimited by the
// end of the connection.
func TestStreamResponseToHTTP10(t *testing.T) {
	h := newHarness(t, streamingProducer(testkit.RunStarted, testkit.ContentEvent, testkit.RunFinished), nil)
	got := rawExchange(t, strings.TrimPrefix(h.url, "http://"), runRequest("HTTP/1.0"))
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != testkit.RunStarted+testkit.ContentEvent+testkit.RunFinished || len(resp.TransferEncoding) != 0 ||
		strings.Contains(got, "Transfer-Encoding") || !strings.Contains(got, "\r\nConnection: close\r\n") {
		t.Errorf("HTTP/1.0 response %q (%v)", got, err)
	}
}

// Runs one after the other on one connection: each response is whole and
// keeps the connection, without Connection: close, and the next request is
// served on it. A consumer that sent a second request right behind the
// first (pipelining) is told the connection closes after the first response.
func TestStreamKeepAliveOnTheWire(t *testing.T) {
	var asked atomic.Int32
	produce := streamingProducer(testkit.RunStarted, testkit.ContentEvent, testkit.RunFinished)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) { asked.Add(1); produce(w, r) }, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
	br := bufio.NewReader(c)
	for i := range 3 {
		io.WriteString(c, runRequest("HTTP/1.1")) //nolint:errcheck
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != testkit.RunStarted+testkit.ContentEvent+testkit.RunFinished || resp.Close {
			t.Fatalf("run %d: close=%v %q %v", i, resp.Close, b, err)
		}
		h.report()
	}
	// Pipelined behind a persistent connection's earlier runs (the stream is
	// handed over in place, without a hijack): the first is answered with
	// Connection: close, the second is never sent to the producer.
	before := asked.Load()
	io.WriteString(c, runRequest("HTTP/1.1")+runRequest("HTTP/1.1")) //nolint:errcheck
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != testkit.RunStarted+testkit.ContentEvent+testkit.RunFinished || !resp.Close {
		t.Fatalf("pipelined on a persistent connection: close=%v %q %v", resp.Close, b, err)
	}
	h.report()
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Fatalf("after the pipelined pair's first response: %q %v, want the connection closed", rest, err)
	}
	if n := asked.Load() - before; n != 1 {
		t.Fatalf("the producer was asked %d times for the pipelined pair, want 1", n)
	}
	// Pipelined: both requests in one write.
	pc, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := rawExchange(t, strings.TrimPrefix(h.url, "http://"), runRequest("HTTP/1.1")+runRequest("HTTP/1.1"))
	if !strings.Contains(got, "\r\nConnection: close\r\n") || !strings.HasSuffix(got, "0\r\n\r\n") {
		t.Errorf("pipelined: %q", got)
	}
}

// A consumer that goes away from a silent stream is noticed at once: the
// producer's request is cancelled well within the liveness bound, the run
// reports consumer_gone, and its goroutines end. It goes with a FIN, or with
// a reset (SO_LINGER 0), after which a write to it fails at once: the relay
// writes it nothing more, not even the body's last chunk.
func TestIdleStreamConsumerGoneCancelsPromptly(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) { idleStreamConsumerGone(t, reset) })
	}
}

func idleStreamConsumerGone(t *testing.T, reset bool) {
	cancelled := make(chan time.Time, 1)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		<-r.Context().Done()
		cancelled <- time.Now()
	}, nil)
	base := runGoroutines()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, runRequest("HTTP/1.1"))
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "RUN_STARTED") {
			break
		}
	}
	// The rest of the event's chunk: its blank line and the chunk's CRLF.
	// The flush that carried it is then over (the race detector's build
	// writes it in pieces), so that the hangup comes between writes.
	for _, want := range []string{"\n", "\r\n"} {
		if line, err := br.ReadString('\n'); line != want || err != nil {
			t.Fatalf("after RUN_STARTED: %q, %v", line, err)
		}
	}
	if reset {
		c.(*net.TCPConn).SetLinger(0) //nolint:errcheck // the close then resets
	}
	closed := time.Now()
	c.Close()
	select {
	case at := <-cancelled:
		t.Logf("producer request cancelled %v after the consumer closed", at.Sub(closed))
	case <-time.After(testkit.Liveness):
		t.Fatal("the producer's request was not cancelled")
	}
	// Nothing was written after the hangup, so no error stands behind the
	// abort: the read the relay interrupted is not the producer's failure.
	if rep := h.report(); rep.Abort != "consumer_gone" || rep.Err != nil {
		t.Errorf("report %+v", rep)
	}
	if a := h.relay.Active(); a != 0 {
		t.Errorf("%d runs active", a)
	}
	waitGoroutines(t, base)
}

// Shutdown of the server does not wait for streams on hijacked
// connections; AwaitRuns does, and EndRuns ends them with RUN_ERROR.
func TestAwaitRunsWaitsForStreams(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		select {
		case <-release:
			testkit.SSE(w, testkit.RunFinished)
		case <-r.Context().Done():
		}
	}, nil)
	defer close(release)
	resp := h.post("/agent", testkit.MinimalInput)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("first line %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := AwaitRuns(ctx, h.relay.Active); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitRuns with a run streaming: %v", err)
	}
	h.relay.EndRuns()
	ctx2, cancel2 := context.WithTimeout(context.Background(), testkit.Liveness)
	defer cancel2()
	if err := AwaitRuns(ctx2, h.relay.Active); err != nil {
		t.Fatalf("AwaitRuns after EndRuns: %v", err)
	}
	rest, _ := io.ReadAll(br)
	if ev := runErrorOf(t, string(rest)); ev["code"] != CodeShutdown {
		t.Errorf("after EndRuns: %q", rest)
	}
}

// memConn is a consumer connection in memory: it keeps what is written.
type memConn struct {
	net.Conn // nil: only the methods below are used
	writes   int
	wrote    bytes.Buffer
}

func (c *memConn) SetWriteDeadline(time.Time) error { return nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) Write(p []byte) (int, error) {
	c.writes++
	return c.wrote.Write(p)
}
