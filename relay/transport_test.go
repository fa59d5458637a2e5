package relay

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
)

const finishedRun = `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n" +
	`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n"

// A run read to its end gives the producer's connection back to the pool,
// whichever way the response was framed, and the next run uses it. A 204's
// connection is closed instead (TestNoBodyResponseConnectionIsNeverReused):
// the run after each opens a new one.
func TestProducerConnectionReusedAfterRun(t *testing.T) {
	for _, framing := range []string{"chunked", "content-length", "no-content"} {
		t.Run(framing, func(t *testing.T) {
			var mu sync.Mutex
			conns := map[string]bool{}
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				conns[r.RemoteAddr] = true
				mu.Unlock()
				if framing == "no-content" && r.URL.Query().Get("empty") != "" {
					w.WriteHeader(http.StatusNoContent) // no body at all
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				if framing == "content-length" {
					w.Header().Set("Content-Length", strconv.Itoa(len(finishedRun)))
					io.WriteString(w, finishedRun)
					return
				}
				testkit.SSE(w, finishedRun[:40], finishedRun[40:])
			}, func(r *Relay) { r.Client = NewClient(ClientOptions{}) })
			for i := range 3 {
				if framing == "no-content" {
					resp := h.post("/agent?empty=1", testkit.MinimalInput)
					if got := testkit.ReadAll(t, resp); resp.StatusCode != http.StatusNoContent || got != "" {
						t.Fatalf("response without a body: %d %q", resp.StatusCode, got)
					}
					h.report()
				}
				if got := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)); got != finishedRun {
					t.Fatalf("run %d: %q", i, got)
				}
				h.report()
			}
			mu.Lock()
			defer mu.Unlock()
			want := 1
			if framing == "no-content" {
				want = 4 // the first 204's, and one after each 204
			}
			if len(conns) != want {
				t.Errorf("3 runs used %d connections to the producer, want %d", len(conns), want)
			}
		})
	}
}

// An event stream with nothing in it (Content-Length: 0, the connection
// kept open) ends the run at once: the relay does not wait for bytes that
// the framing says will never come.
func TestEmptyEventStreamEndsTheRun(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(200)
	}, nil)
	done := make(chan string, 1)
	go func() { done <- testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput)) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("relayed %q from an empty response", got)
		}
	case <-time.After(testkit.Liveness):
		t.Fatal("the run did not end")
	}
}

// A producer that breaks its chunked framing ends the run with a RUN_ERROR,
// not with its bytes passed on as events.
func TestBrokenChunkFramingEndsWithRunError(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw := hijacked(t, w)
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprint(rw, chunk(`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}`+"\n\n"))
		fmt.Fprint(rw, "5\nhello\r\n")
		rw.Flush()
		conn.SetReadDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
		io.Copy(io.Discard, conn)                              //nolint:errcheck // until the relay hangs up
	}, nil)
	stream := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if e := runErrorOf(t, stream); e["code"] != CodeUpstreamBroken || strings.Contains(stream, "hello") {
		t.Errorf("stream %q", stream)
	}
}

// A stream on which the producer goes silent gives up its goroutine, and
// takes the stream up again, in order, when the producer goes on. Where
// streams cannot park, the stream waits on in its goroutine, whole.
func TestSilentStreamParksAndResumes(t *testing.T) {
	t.Run("parks", func(t *testing.T) { silentStream(t, nil) })
	t.Run("cannot park", func(t *testing.T) { silentStream(t, &noParking{make(chan struct{}, 64)}) })
}

// noParking refuses every stream's parking (armingWith); it tells
// attempts of each attempt.
type noParking struct{ attempts chan struct{} }

func (p noParking) arm(*wire.Poller, syscall.RawConn, int32, time.Time) bool {
	select {
	case p.attempts <- struct{}{}:
	default:
	}
	return false
}

// heldStream opens a run whose producer sends RUN_STARTED, then nothing
// until release is called, then rest; it returns once the consumer has read
// RUN_STARTED, with the reader of what follows. The test's end releases the
// producer too.
func heldStream(t *testing.T, configure func(*Relay), rest ...string) (h *harness, br *bufio.Reader, release func()) {
	t.Helper()
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	h = newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n")
		<-held
		testkit.SSE(w, rest...)
	}, configure)
	// A failed test must not leave the producer waiting: released before
	// the harness's cleanup closes the producer, which waits for its
	// handlers (cleanups run last registered first).
	t.Cleanup(release)
	resp := h.post("/agent", testkit.MinimalInput)
	t.Cleanup(func() { resp.Body.Close() })
	br = bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("first line %q, %v", line, err)
	}
	return h, br, release
}

func silentStream(t *testing.T, pk *noParking) {
	h, br, release := heldStream(t, func(r *Relay) {
		if pk != nil {
			armingWith(r, pk.arm)
		}
	},
		`data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`+"\n\n",
		`data: {"type":"TEXT_MESSAGE_END","messageId":"m"}`+"\n\n",
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	if pk == nil {
		testkit.WaitFor(t, "the silent stream gives up its goroutine reading the producer", func() bool {
			return testkit.GoroutinesIn("wire.(*Body).Poll") == 0
		})
	} else {
		// The attempt to park fails: the stream waits on in its goroutine.
		testkit.Await(t, pk.attempts, "the silent stream never tried to park")
		testkit.WaitFor(t, "the stream reading the producer in its goroutine again", func() bool {
			return testkit.GoroutinesIn("wire.(*Body).Poll") > 0
		})
	}
	release()
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), `"TEXT_MESSAGE_START"`) ||
		!strings.HasSuffix(string(rest), `data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n") {
		t.Fatalf("after the pause: %q, %v", rest, err)
	}
	if rep := h.report(); rep.Abort != "" || rep.Events != 4 {
		t.Errorf("report: abort %q, %d events", rep.Abort, rep.Events)
	}
}
