package relay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// The faults of issue #7 that relay_test.go does not cover already
// (refused connection, reset, hang before headers, idle and run timeouts,
// oversized frame, clean close and shutdown are there).

// A 200 response that is not an event stream is passed on as it is: the
// relay does not try to read it as events.
func TestNonEventStreamResponsePassesThrough(t *testing.T) {
	for _, tc := range []struct{ ct, body string }{
		{"application/json", `{"type":"RUN_STARTED","note":"a JSON response, not a stream"}`},
		{"text/html; charset=utf-8", "<html><body>Agent is down for maintenance</body></html>\n\ndata: {}\n\n"},
		{"application/octet-stream", "bytes\x00\xff"},
		{"", "a response that says nothing of its type"}, // passed on without one, not as text/plain
	} {
		t.Run(tc.ct, func(t *testing.T) {
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.ct == "" {
					w.Header()["Content-Type"] = nil // net/http would sniff one otherwise
				} else {
					w.Header().Set("Content-Type", tc.ct)
				}
				w.WriteHeader(200)
				io.WriteString(w, tc.body)
			}, nil)
			resp := h.post("/agent", testkit.MinimalInput)
			if got := testkit.ReadAll(t, resp); resp.StatusCode != 200 || got != tc.body {
				t.Errorf("status %d, body %q", resp.StatusCode, got)
			}
			if got := strings.Join(resp.Header.Values("Content-Type"), ", "); got != tc.ct {
				t.Errorf("content type %q, want %q", got, tc.ct)
			}
			if rep := h.report(); rep.Status != 200 || rep.Events != 0 || rep.Abort != "" {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// A producer that compresses although the relay asked for identity: the
// relay decodes the stream as it arrives (events are not held back until
// the end) and sends it on uncompressed.
func TestGzipResponseIsDecoded(t *testing.T) {
	next := make(chan struct{})
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("producer got Accept-Encoding %q", ae)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(200)
		zw := gzip.NewWriter(w)
		io.WriteString(zw, testkit.RunStarted)
		zw.Flush()
		w.(http.Flusher).Flush()
		select { // the consumer must see RUN_STARTED before the rest is sent
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(zw, testkit.Unusual)
		zw.Close()
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput, "Accept-Encoding", "gzip")
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("consumer got Content-Encoding %q", ce)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first+"\n" != testkit.RunStarted {
		t.Fatalf("first line %q, %v", first, err)
	}
	close(next)
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || string(rest) != "\n"+testkit.Unusual {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if rep := h.report(); rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
		t.Errorf("report %+v", rep)
	}
}

// A gzip stream that breaks off (truncated compressed data, then the
// connection closes) is a broken stream: the consumer gets a RUN_ERROR.
func TestGzipResponseCutOffEndsWithRunError(t *testing.T) {
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	io.WriteString(zw, testkit.RunStarted+`data: {"type":"CUSTOM","name":"n","value":"`+strings.Repeat("v", 4000)+`"}`+"\n\n")
	zw.Close()
	cut := compressed.Bytes()[:compressed.Len()-30] // no end of stream, no trailer
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijacked(t, w)
		defer conn.Close()
		rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n")
		rw.Write(cut)
		rw.Flush()
	}, nil)
	got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if !strings.HasPrefix(got, testkit.RunStarted) {
		t.Fatalf("stream %q", got)
	}
	if ev := runErrorOf(t, got); ev["code"] != CodeUpstreamBroken {
		t.Errorf("RUN_ERROR %v", ev)
	}
}

// A compression the relay does not decode: the response is passed on as it
// is, header included, for the consumer to decode.
func TestUnknownContentEncodingPassesThrough(t *testing.T) {
	body := "\x1b\x07\x00\xf8not really brotli"
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "br")
		w.WriteHeader(200)
		io.WriteString(w, body)
	}, nil)
	resp := h.post("/agent", testkit.MinimalInput)
	if got := testkit.ReadAll(t, resp); got != body || resp.Header.Get("Content-Encoding") != "br" {
		t.Errorf("body %q, headers %v", got, resp.Header)
	}
	h.report()
}

// notJSON are frames a broken producer may send, each on its own line in
// the stream below.
var notJSON = []string{
	`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"cut` + "\n\n",
	"data: not JSON at all\n\n",
	"data: \n\n",
	`data: {"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x",}` + "\n\n",
	`data: {"type":"REASONING_START","messageId":"r1"` + "\n\n",
	`data: ["type","RUN_FINISHED"]` + "\n\n",
	"data: {\"type\":\"CUSTOM\",\"name\":\"\xff\xfe\",\"value\":1 2}\n\n",
}

// A frame that is not JSON is relayed untouched, in its place, and the
// stream goes on: never repaired, never dropped, never a crash or a hang.
// Every consumer fails the run on it with its own parse error, so the
// relay adds no RUN_ERROR. On a translated run, where the relay reads the
// events, it logs them with a count.
func TestNotJSONFrameIsRelayedUntouched(t *testing.T) {
	for _, tc := range []struct {
		name     string
		consumer string
		started  string
		logged   bool
	}{
		{"pass-through", `"1.0"`, testkit.RunStarted, false},
		// A 1.0 producer, a 0.0.45 consumer: every frame goes through
		// the downgrade chain.
		{"translated", `"0.0.45"`, testkit.RunStarted, true},
		// A 0.0.40 producer (no protocolVersion), a 1.0 consumer: the
		// upgrade chain.
		{"upgraded", `"1.0"`, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}` + "\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.started + strings.Join(notJSON, "") + testkit.RunFinished
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				testkit.StreamHeaders(w)
				testkit.SSE(w, in)
			}, nil)
			input := `{"threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[],"protocolVersion":` + tc.consumer + `}`
			resp := h.post("/agent", input)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, testkit.ReadAll(t, resp))
			}
			got := testkit.ReadAll(t, resp)
			pos := 0
			for _, f := range notJSON {
				i := strings.Index(got[pos:], f)
				if i < 0 {
					t.Fatalf("frame %q not relayed untouched (or out of order) in %q", f, got)
				}
				pos += i + len(f)
			}
			if !strings.HasSuffix(got, `"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n") {
				t.Errorf("stream does not end with the producer's RUN_FINISHED: %q", got)
			}
			rep := h.report()
			if rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
				t.Errorf("report %+v", rep)
			}
			logged := h.logs.FilterMessageSnippet("not JSON").All()
			// Counted are the frames the relay parses: those a step of the
			// run's chain concerns.
			if tc.logged && (len(logged) != 1 || logged[0].ContextMap()["count"].(int64) < 1 || logged[0].ContextMap()["count"].(int64) > int64(len(notJSON))) {
				t.Errorf("log lines about frames that are not JSON: %v", logged)
			}
			if !tc.logged && len(logged) != 0 {
				t.Errorf("an untranslated run is not parsed, yet logged %v", logged)
			}
		})
	}
}

// An empty stream, or a producer that closes cleanly inside a run: relayed
// as it was, without a terminal event, and logged.
func TestCleanCloseWithoutRunIsLogged(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, ": nothing to say\n\n")
	}, nil)
	if got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)); got != ": nothing to say\n\n" {
		t.Fatalf("stream %q", got)
	}
	if rep := h.report(); rep.Terminal != "" || rep.Abort != "" || rep.Runs != 0 {
		t.Errorf("report %+v", rep)
	}
	if n := h.logs.FilterMessageSnippet("without RUN_FINISHED or RUN_ERROR").Len(); n != 1 {
		t.Errorf("%d log lines about the missing terminal event", n)
	}
}

// Many consumers that go away at once from silent streams: every
// producer's request is cancelled (net/http cancels a request's context
// when its connection closes), no run stays tracked, and the goroutines
// (the relay's, and the producer's one per connection) return to their
// baseline. The time from the
// consumers' close to the last producer request ending is logged.
func TestConsumersGoneReleaseEverything(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var cancelledAt []time.Time
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		<-r.Context().Done() // silent until the relay closes the connection
		mu.Lock()
		cancelledAt = append(cancelledAt, time.Now())
		mu.Unlock()
	}, nil)
	round := func() time.Duration {
		t.Helper()
		mu.Lock()
		cancelledAt = cancelledAt[:0]
		mu.Unlock()
		bodies := make([]io.ReadCloser, n)
		for i := range bodies {
			resp := h.post("/agent", testkit.MinimalInput)
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
				t.Fatalf("first line %q, %v", line, err)
			}
			bodies[i] = resp.Body
		}
		if a := h.relay.Active(); a != n {
			t.Fatalf("%d runs active, want %d", a, n)
		}
		closed := time.Now()
		for _, b := range bodies {
			b.Close()
		}
		for range n {
			if rep := h.report(); rep.Abort != "consumer_gone" {
				t.Errorf("report %+v", rep)
			}
		}
		cancelled := func() int { mu.Lock(); defer mu.Unlock(); return len(cancelledAt) }
		testkit.WaitFor(t, "every producer request cancelled", func() bool { return cancelled() == n }, func() string {
			return fmt.Sprintf("%d of %d producer requests cancelled", cancelled(), n)
		})
		if a := h.relay.Active(); a != 0 {
			t.Errorf("%d runs still tracked", a)
		}
		var slowest time.Duration
		for _, at := range cancelledAt {
			slowest = max(slowest, at.Sub(closed))
		}
		return slowest
	}
	// The first round brings the servers' worker pools to their size
	// (fasthttp keeps idle workers for 10s); the second must leave
	// nothing beyond them.
	round()
	h.consumer.Transport.(*http.Transport).CloseIdleConnections()
	runtime.GC()
	base := runGoroutines()
	slowest := round()
	t.Logf("%d idle streams: the last producer request was cancelled %v after the consumers closed", n, slowest)
	if slowest > 2*time.Second {
		t.Errorf("cancellation took %v", slowest)
	}
	h.consumer.Transport.(*http.Transport).CloseIdleConnections()
	waitGoroutines(t, base)
}

// dialSmallWindow connects with a small receive buffer, set before the
// connection is made so that the kernel cannot grow it: a consumer that
// stops reading then holds little in its own socket.
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = setReceiveBuffer(fd, 64<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// A consumer that stops reading slows the producer down: what the producer
// gets out stays bounded (the relay's bounded stream buffer, its scanner
// and the sockets' buffers), instead of the relay buffering the producer's
// whole stream. When the consumer reads again, every event arrives, in
// order.
func TestSlowConsumerSlowsTheProducer(t *testing.T) {
	const events = 32 << 10 // 32 MiB of 1 KiB events
	pad := strings.Repeat("p", 1024-64)
	var written atomic.Int64
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		for i := range events {
			f := `data: {"type":"CUSTOM","name":"seq","value":` + strconv.Itoa(i) + `,"pad":"` + pad + `"}` + "\n\n"
			if _, err := io.WriteString(w, f); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			written.Add(int64(len(f)))
		}
		testkit.SSE(w, testkit.RunFinished)
	}, nil)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conn := dialSmallWindow(t, strings.TrimPrefix(h.url, "http://"))
	defer conn.Close()
	fmt.Fprintf(conn, "POST /agent HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(testkit.MinimalInput), testkit.MinimalInput)

	// Not reading: wait until the relay's write to the consumer waits for
	// room and, behind it, the producer's write to the relay does too. That
	// state lasts (nothing reads the consumer's side, so the relay reads the
	// producer no more), where a pause in the bytes written could be the
	// scheduler's.
	testkit.WaitFor(t, "the relay and the producer both waiting to write", func() bool {
		relayWaits, producerWaits := false, false
		for _, g := range strings.Split(testkit.Stacks(), "\n\n") {
			if !strings.Contains(g, "internal/poll.(*pollDesc).waitWrite") {
				continue
			}
			relayWaits = relayWaits || strings.Contains(g, "wire.(*ChunkWriter).emit")
			producerWaits = producerWaits || strings.Contains(g, "TestSlowConsumerSlowsTheProducer")
		}
		return relayWaits && producerWaits
	}, func() string {
		return fmt.Sprintf("%d bytes written; goroutines:\n%s", written.Load(), testkit.Stacks())
	})
	last := written.Load()
	var stalled runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&stalled)
	grown := int64(stalled.HeapInuse) - int64(before.HeapInuse)
	t.Logf("consumer not reading: the producer stalled after %d KiB of %d KiB; heap in use grew by %d KiB", last>>10, events, grown>>10)
	// What the producer got out sits mostly in the kernel's socket buffers
	// (loopback autotunes them to several MiB); the relay itself holds at
	// most its bounded stream buffer (160 KiB) and a frame.
	if last > 16<<20 {
		t.Errorf("the producer got %d MiB out to a consumer that reads nothing", last>>20)
	}
	if grown > 4<<20 {
		t.Errorf("the heap grew by %d KiB while the consumer read nothing", grown>>10)
	}
	if h.relay.Active() != 1 {
		t.Errorf("the run is not in flight")
	}

	// Reading again: everything arrives, in order.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	next := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(line, []byte(`"value":`)); i >= 0 && bytes.Contains(line, []byte(`"name":"seq"`)) {
			v := line[i+len(`"value":`):]
			v = v[:bytes.IndexByte(v, ',')]
			if string(v) != strconv.Itoa(next) {
				t.Fatalf("event %s where %d was due", v, next)
			}
			next++
		}
	}
	if next != events {
		t.Errorf("%d events of %d arrived", next, events)
	}
	if rep := h.report(); rep.Terminal != "RUN_FINISHED" || rep.Abort != "" {
		t.Errorf("report %+v", rep)
	}
}
