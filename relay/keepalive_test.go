package relay

import (
	"bufio"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap/zapcore"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
)

// keepAliveModes are the ways a stream waits for a silent producer, each
// of which a keep-alive must find: parked (no goroutine: the Poller
// registration's deadline wakes it), in its goroutine on a polled body
// (the read deadline), with no Poller, without ReuseGoroutines (a
// goroutine per stream, never parked), and in a blocking read of a body
// that cannot be polled (gzip, TLS, gzip over TLS: the deadline beneath
// the decoders).
var keepAliveModes = []keepAliveMode{
	{"parked", false, false, func(*Relay) {}},
	{"in its goroutine", false, false, func(r *Relay) { parkingAfter(r, time.Hour) }},
	{"no poller", false, false, func(r *Relay) { r.Poller = nil }},
	{"goroutine per stream", false, false, func(r *Relay) { r.ReuseGoroutines = false }},
	{"blocking read", true, false, func(*Relay) {}},
	{"TLS", false, true, func(*Relay) {}},
	{"gzip over TLS", true, true, func(*Relay) {}},
}

type keepAliveMode struct {
	name      string
	gzip, tls bool
	configure func(*Relay)
}

// harness is newHarness in the mode: with a TLS producer, whose
// certificate the relay's client trusts, when tls.
func (m keepAliveMode) harness(t *testing.T, producer http.HandlerFunc, configure func(*Relay)) *harness {
	t.Helper()
	return newHarness(t, producer, func(r *Relay) {
		if m.tls {
			srv := httptest.NewTLSServer(producer)
			t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
			client := NewClient(ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond})
			client.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
			r.Upstream, r.Client = srv.URL, client
		}
		configure(r)
		m.configure(r)
	})
}

// silentProducer answers with before, flushed, then waits for resume (or
// the request's end) and sends after; gzip-encoded when gz.
func silentProducer(before, after string, resume <-chan struct{}, gz bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, flush, end := eventStreamWriter(w, gz)
		defer end()
		io.WriteString(out, before) //nolint:errcheck
		flush()
		select {
		case <-resume:
		case <-r.Context().Done():
			return
		}
		io.WriteString(out, after) //nolint:errcheck
	}
}

// eventStreamWriter answers w with an event stream, gzip-encoded when gz:
// what to write the events to, its flush, and its end (the gzip stream's).
func eventStreamWriter(w http.ResponseWriter, gz bool) (out io.Writer, flush, end func()) {
	w.Header().Set("Content-Type", "text/event-stream")
	out, flush, end = w, func() { w.(http.Flusher).Flush() }, func() {}
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		out, end = zw, func() { zw.Close() }                    //nolint:errcheck
		flush = func() { zw.Flush(); w.(http.Flusher).Flush() } //nolint:errcheck
	}
	w.WriteHeader(http.StatusOK)
	return out, flush, end
}

// frames splits an event stream into its frames, each with its blank line.
func frames(s string) []string {
	var fs []string
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			return append(fs, s)
		}
		fs = append(fs, s[:i+2])
		s = s[i+2:]
	}
	return fs
}

// writtenTap keeps what a run wrote to its consumer (as a recording
// does) and its count of comments written.
type writtenTap struct {
	endTap
	mu       sync.Mutex
	wrote    strings.Builder
	comments int
}

func (w *writtenTap) Wrote(p []byte) { w.mu.Lock(); w.wrote.Write(p); w.mu.Unlock() }

func (w *writtenTap) End(rep *RunReport) {
	w.mu.Lock()
	for i := range event.NumLabels {
		if event.Label(i) == "comment" {
			w.comments = rep.Counts.By[event.ToConsumer][i].Events
		}
	}
	w.mu.Unlock()
	w.endTap.End(rep)
}

// While the producer is silent mid-stream, the consumer is written a
// keep-alive comment each interval, between frames: the events around
// them arrive byte for byte as the producer sent them, the run completes,
// and the run's counts and its tap (what a recording keeps) have every
// keep-alive, whichever way the stream waits.
func TestKeepAlivesWhileTheProducerIsSilent(t *testing.T) {
	const before = testkit.RunStarted + `data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}` + "\n\n"
	const after = testkit.ContentEvent + `data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}` + "\n\n" + testkit.RunFinished
	for _, mode := range keepAliveModes {
		t.Run(mode.name, func(t *testing.T) {
			resume := make(chan struct{})
			tap := &writtenTap{}
			h := mode.harness(t, silentProducer(before, after, resume, mode.gzip), func(r *Relay) {
				r.KeepAlive = 20 * time.Millisecond
			})
			tap.endTap = endTap{end: reportsTo(h.reports)}
			h.relay.Tap = func(*RunReport) RunTap { return tap }
			resp := h.post("/agent", testkit.MinimalInput)
			defer resp.Body.Close()
			// No keep-alive ever coming fails the test within Liveness: the
			// close ends the reads.
			defer time.AfterFunc(testkit.Liveness, func() { resp.Body.Close() }).Stop()
			br := bufio.NewReader(resp.Body)
			var got strings.Builder
			keepAlives := 0
			for keepAlives < 3 {
				frame := readFrame(t, br)
				got.WriteString(frame)
				if frame == event.KeepAliveFrame {
					keepAlives++
				}
			}
			close(resume)
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatal(err)
			}
			got.Write(rest)
			keepAlives = 0
			var events strings.Builder
			for _, f := range frames(got.String()) {
				if f == event.KeepAliveFrame {
					keepAlives++
				} else {
					events.WriteString(f)
				}
			}
			if events.String() != before+after {
				t.Errorf("events relayed\n%q\nwant\n%q", events.String(), before+after)
			}
			rep := h.report()
			if rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
				t.Errorf("report %+v", rep)
			}
			tap.mu.Lock()
			defer tap.mu.Unlock()
			if tap.wrote.String() != got.String() {
				t.Errorf("the tap saw\n%q\nthe consumer read\n%q", tap.wrote.String(), got.String())
			}
			if tap.comments != keepAlives {
				t.Errorf("%d comments counted written, %d keep-alives read", tap.comments, keepAlives)
			}
		})
	}
}

// readFrame reads one frame off an event stream, its blank line included.
func readFrame(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var frame strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", frame.String()+line, err)
		}
		frame.WriteString(line)
		if line == "\n" {
			return frame.String()
		}
	}
}

// Keep-alives are the relay's, not the producer's: a producer silent for
// the idle timeout still has its run ended with a RUN_ERROR, keep-alives
// written meanwhile.
func TestKeepAlivesDoNotHoldOffTheIdleTimeout(t *testing.T) {
	for _, mode := range keepAliveModes {
		t.Run(mode.name, func(t *testing.T) {
			h := mode.harness(t, silentProducer(testkit.RunStarted, "", nil, mode.gzip), func(r *Relay) {
				r.KeepAlive = 10 * time.Millisecond
				r.IdleTimeout = 150 * time.Millisecond
			})
			body := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
			if n := strings.Count(body, event.KeepAliveFrame); n == 0 {
				t.Errorf("no keep-alive in %q", body)
			}
			if ev := runErrorOf(t, body); ev["code"] != CodeUpstreamIdleTimeout {
				t.Errorf("RUN_ERROR %v", ev)
			}
			if rep := h.report(); rep.Abort != CodeUpstreamIdleTimeout {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// A keep-alive is owed to the consumer's silence, not the producer's: a
// producer that sends an event every few milliseconds, for several
// intervals in all, has its consumer written no keep-alive, whichever way
// the stream waits (each write to the consumer starts its silence again:
// noteConsumerSilence).
func TestNoKeepAlivesWhileTheConsumerIsWritten(t *testing.T) {
	const interval, gap, events = 300 * time.Millisecond, 5 * time.Millisecond, 200 // a second in all
	for _, mode := range keepAliveModes {
		t.Run(mode.name, func(t *testing.T) {
			h := mode.harness(t, func(w http.ResponseWriter, r *http.Request) {
				out, flush, end := eventStreamWriter(w, mode.gzip)
				defer end()
				io.WriteString(out, testkit.RunStarted) //nolint:errcheck
				flush()
				tick := time.NewTicker(gap)
				defer tick.Stop()
				for range events {
					select {
					case <-tick.C:
					case <-r.Context().Done():
						return
					}
					io.WriteString(out, testkit.ContentEvent) //nolint:errcheck
					flush()
				}
				io.WriteString(out, testkit.RunFinished) //nolint:errcheck
			}, func(r *Relay) {
				r.KeepAlive = interval
			})
			body := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
			if n := strings.Count(body, event.KeepAliveFrame); n != 0 {
				t.Errorf("%d keep-alives written between events %v apart, the interval %v", n, gap, interval)
			}
			if got := strings.Count(body, testkit.ContentEvent); got != events {
				t.Errorf("%d events relayed, want %d", got, events)
			}
			h.report()
		})
	}
}

// With KeepAlive zero the relay writes none.
func TestNoKeepAlivesWhenOff(t *testing.T) {
	h := newHarness(t, silentProducer(testkit.RunStarted, "", nil, false), func(r *Relay) {
		r.IdleTimeout = 100 * time.Millisecond
	})
	body := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	if strings.Contains(body, event.KeepAliveFrame) {
		t.Errorf("keep-alive written: %q", body)
	}
	h.report()
}

// A consumer that left behind a proxy which holds the relay's connection
// until it has something to write (as load balancers do) is found by the
// next keep-alive: the proxy then closes the relay's connection and the
// producer's request is cancelled, within an interval, with or without the
// Poller.
func TestKeepAliveRevealsAConsumerThatLeft(t *testing.T) {
	for _, mode := range []struct {
		name      string
		configure func(*Relay)
	}{
		{"poller", func(*Relay) {}},
		{"no poller", func(r *Relay) { r.Poller = nil }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cancelled := make(chan struct{})
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				testkit.StreamHeaders(w)
				testkit.SSE(w, testkit.RunStarted)
				<-r.Context().Done()
				close(cancelled)
			}, func(r *Relay) {
				r.KeepAlive = 50 * time.Millisecond
				mode.configure(r)
			})
			left := make(chan struct{})
			revealed := make(chan string, 1)
			proxy := testkit.AcceptEach(t, func(c net.Conn) {
				up, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
				if err != nil {
					t.Error(err)
					return
				}
				go io.Copy(up, c) //nolint:errcheck // the request; the consumer's close ends it
				buf := make([]byte, 4096)
				var after []byte // written since the consumer left
				for {
					n, err := up.Read(buf)
					if err != nil {
						return
					}
					select {
					case <-left:
						// The consumer is gone: the proxy finds it when
						// the relay writes a frame (not the tail of the
						// chunk before), and closes the relay's connection.
						after = append(after, buf[:n]...)
						if strings.Contains(string(after), "\n\n") {
							revealed <- string(after)
							up.Close()
							return
						}
						continue
					default:
					}
					c.Write(buf[:n]) //nolint:errcheck
				}
			})
			c := testkit.DialConsumer(t, proxy)
			testkit.SendRun(t, c, testkit.MinimalInput)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f := readFrame(t, bufio.NewReader(resp.Body)); f != testkit.RunStarted {
				t.Fatalf("first frame %q", f)
			}
			close(left)
			c.Close()
			if got := testkit.Await(t, revealed, "nothing written after the consumer left"); !strings.Contains(got, event.KeepAliveFrame) {
				t.Errorf("the write that found the consumer gone: %q", got)
			}
			testkit.Await(t, cancelled, "the producer's request was not cancelled")
			if rep := h.report(); rep.Abort != CodeConsumerGone {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// runStarted posts a run to h and returns the reader of its response once
// RUN_STARTED was read. The response is closed at the test's end, or after
// Liveness, which ends a read that waits longer.
func runStarted(t *testing.T, h *harness) *bufio.Reader {
	t.Helper()
	resp := h.post("/agent", testkit.MinimalInput)
	stop := time.AfterFunc(testkit.Liveness, func() { resp.Body.Close() })
	t.Cleanup(func() { stop.Stop(); resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if f := readFrame(t, br); f != testkit.RunStarted {
		t.Fatalf("first frame %q", f)
	}
	return br
}

// Keep-alives go on after the producer speaks again: a producer silent
// until the consumer has read a keep-alive, three times over, has each of
// its events relayed and the run complete, whichever way the stream waits
// (a deadline that the first bytes cleared, or that a decoder kept as an
// error, would end the keep-alives or the body).
func TestKeepAlivesBetweenSilences(t *testing.T) {
	const silences = 3
	for _, mode := range keepAliveModes {
		t.Run(mode.name, func(t *testing.T) {
			heard := make(chan struct{})
			h := mode.harness(t, func(w http.ResponseWriter, r *http.Request) {
				out, flush, end := eventStreamWriter(w, mode.gzip)
				defer end()
				io.WriteString(out, testkit.RunStarted) //nolint:errcheck
				flush()
				for range silences {
					select {
					case <-heard:
					case <-r.Context().Done():
						return
					}
					io.WriteString(out, testkit.ContentEvent) //nolint:errcheck
					flush()
				}
				io.WriteString(out, testkit.RunFinished) //nolint:errcheck
			}, func(r *Relay) { r.KeepAlive = 20 * time.Millisecond })
			br := runStarted(t, h)
			for i := range silences {
				if f := readFrame(t, br); f != event.KeepAliveFrame {
					t.Fatalf("silence %d: %q before a keep-alive", i, f)
				}
				heard <- struct{}{}
				f := readFrame(t, br)
				for f == event.KeepAliveFrame {
					f = readFrame(t, br)
				}
				if f != testkit.ContentEvent {
					t.Fatalf("after silence %d: %q", i, f)
				}
			}
			rest, err := io.ReadAll(br)
			if err != nil || strings.ReplaceAll(string(rest), event.KeepAliveFrame, "") != testkit.RunFinished {
				t.Fatalf("the end %q, %v", rest, err)
			}
			if rep := h.report(); rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

// A parked stream's keep-alives come from its Poller registration's
// deadline (the read deadline of a parked descriptor): each parking arms
// the registration with the next keep-alive's time, and the stream, with
// no goroutine between, writes the keep-alive when woken at it.
func TestParkedKeepAliveIsThePollerDeadline(t *testing.T) {
	const every = 30 * time.Millisecond
	type parking struct {
		at, deadline time.Time
	}
	parkings := make(chan parking, 64)
	resume := make(chan struct{})
	var pl *Poller
	h := newHarness(t, silentProducer(testkit.RunStarted, testkit.RunFinished, resume, false), func(r *Relay) {
		r.KeepAlive = every
		pl = r.Poller
		armingWith(r, func(w *wire.Poller, rc syscall.RawConn, token int32, deadline time.Time) bool {
			parkings <- parking{time.Now(), deadline}
			return w.ArmRead(rc, token, deadline)
		})
	})
	br := runStarted(t, h)
	for i := range 3 {
		p := testkit.Await(t, parkings, "the stream did not park")
		if p.deadline.IsZero() || p.deadline.Sub(p.at) > every {
			t.Errorf("parking %d at %v armed with deadline %v", i, p.at, p.deadline)
		}
		testkit.WaitFor(t, "the parked stream holds a goroutine", func() bool { return pl.w.Running() == 0 })
		if f := readFrame(t, br); f != event.KeepAliveFrame {
			t.Fatalf("frame %q, want a keep-alive", f)
		}
	}
	close(resume)
	if rest, err := io.ReadAll(br); err != nil || !strings.HasSuffix(string(rest), testkit.RunFinished) {
		t.Fatalf("the end %q, %v", rest, err)
	}
	if rep := h.report(); rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
		t.Errorf("report %+v", rep)
	}
}

// A Client whose response bodies the relay does not read off their
// connection (not NewClient's) leaves no read deadline to set: its streams
// get no keep-alives, and the Relay says so once, at WARN.
func TestNoKeepAlivesWithAnotherClient(t *testing.T) {
	const every = 5 * time.Millisecond
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		select {
		case <-time.After(10 * every): // a producer that thinks
		case <-r.Context().Done():
			return
		}
		testkit.SSE(w, testkit.RunFinished)
	}, func(r *Relay) {
		r.KeepAlive = every
		r.Client = &fasthttp.Client{StreamResponseBody: true}
	})
	for range 2 {
		body := testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
		if strings.Contains(body, event.KeepAliveFrame) || !strings.HasSuffix(body, testkit.RunFinished) {
			t.Errorf("relayed %q", body)
		}
		if rep := h.report(); rep.Abort != "" {
			t.Errorf("report %+v", rep)
		}
	}
	if n := h.logs.FilterMessageSnippet("no keep-alives").FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Errorf("%d WARN lines on keep-alives, want 1", n)
	}
}

// A stream whose keep-alive deadline is armed far off still ends at once
// when its body is closed (the close's past deadline is not taken for a
// keep-alive's, to read on until the next): at the run timeout, with its
// RUN_ERROR, and when the consumer leaves, with the producer's request
// cancelled; no stream's goroutine is left, whichever way it waited.
func TestStreamWithAKeepAliveArmedEndsWhenClosed(t *testing.T) {
	for _, mode := range keepAliveModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("run timeout", func(t *testing.T) {
				h := mode.harness(t, silentProducer(testkit.RunStarted, "", nil, mode.gzip), func(r *Relay) {
					r.KeepAlive = time.Hour
					r.RunTimeout = 100 * time.Millisecond
				})
				resp := h.post("/agent", testkit.MinimalInput)
				defer time.AfterFunc(testkit.Liveness, func() { resp.Body.Close() }).Stop()
				body := testkit.ReadAll(t, resp)
				if ev := runErrorOf(t, body); ev["code"] != CodeRunTimeout {
					t.Errorf("RUN_ERROR %v in %q", ev, body)
				}
				if rep := h.report(); rep.Abort != CodeRunTimeout {
					t.Errorf("report %+v", rep)
				}
				noStreamLeft(t)
			})
			t.Run("consumer gone", func(t *testing.T) {
				cancelled := make(chan struct{})
				silent := silentProducer(testkit.RunStarted, "", nil, mode.gzip) // until the request ends
				h := mode.harness(t, func(w http.ResponseWriter, r *http.Request) {
					silent(w, r)
					close(cancelled)
				}, func(r *Relay) { r.KeepAlive = time.Hour })
				resp := h.post("/agent", testkit.MinimalInput)
				if f := readFrame(t, bufio.NewReader(resp.Body)); f != testkit.RunStarted {
					t.Fatalf("first frame %q", f)
				}
				resp.Body.Close()
				h.consumer.CloseIdleConnections()
				testkit.Await(t, cancelled, "the producer's request was not cancelled")
				if rep := h.report(); rep.Abort != CodeConsumerGone {
					t.Errorf("report %+v", rep)
				}
				noStreamLeft(t)
			})
		})
	}
}

// noStreamLeft fails t when a stream still reads its producer once its
// run was reported.
func noStreamLeft(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "a stream still reads its producer", func() bool {
		return testkit.GoroutinesIn("relay.(*relayedStream).loop") == 0 && testkit.GoroutinesIn("wire.(*Body).Read") == 0
	})
}
