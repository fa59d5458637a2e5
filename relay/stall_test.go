package relay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A consumer that stops reading (its small receive buffer full, and the
// relay's send buffer behind it) is told apart from one that went away:
// ConsumerStallTimeout cuts it as consumer_stalled, the idle timeout does
// not count the time the relay spends blocked writing to it, and one that
// goes away meanwhile is still consumer_gone. Each test runs with the
// Relay's Poller and without one (a goroutine per stream watches the
// consumer then, and the stream never parks).

// pollerModes runs test with the harness's Poller and without one.
func pollerModes(t *testing.T, test func(t *testing.T, configure func(*Relay))) {
	for _, polled := range []bool{true, false} {
		t.Run(fmt.Sprintf("poller=%v", polled), func(t *testing.T) {
			test(t, func(r *Relay) {
				if !polled {
					r.Poller = nil
				}
			})
		})
	}
}

// seqEvent is a 1 KiB event carrying i.
func seqEvent(i int) string {
	return `data: {"type":"CUSTOM","name":"seq","value":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("p", 1024-64) + `"}` + "\n\n"
}

// relayWriteWaits reports whether a stream's write to its consumer waits
// for room in the socket: the consumer takes nothing.
func relayWriteWaits() bool {
	for _, g := range strings.Split(testkit.Stacks(), "\n\n") {
		if strings.Contains(g, "internal/poll.(*pollDesc).waitWrite") && strings.Contains(g, "wire.(*ChunkWriter).emit") {
			return true
		}
	}
	return false
}

// awaitRelayWriteWaits waits until relayWriteWaits.
func awaitRelayWriteWaits(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "the relay's write to the consumer waiting for room", relayWriteWaits, testkit.Stacks)
}

// onlyRun returns the one run r has in flight.
func onlyRun(t *testing.T, r *Relay) *upstreamBody {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) != 1 {
		t.Fatalf("%d runs in flight, want 1", len(r.runs))
	}
	for u := range r.runs {
		return u
	}
	return nil
}

// awaitIdleCheckWhileWriting waits until the run's idle timer has fired
// while the relay was blocked writing to its consumer (check moves touched
// on then, since nothing reads meanwhile), or the run was cancelled; it
// fails when the cancel was the idle timeout's.
func awaitIdleCheckWhileWriting(t *testing.T, u *upstreamBody) {
	t.Helper()
	blocked := u.touched.Load()
	testkit.WaitFor(t, "the idle timer firing while the write to the consumer waits", func() bool {
		return u.touched.Load() != blocked || u.why() != nil
	})
	if why := u.why(); why == errIdleTimeout {
		t.Fatal("the idle timeout ended the run while the relay was blocked writing to its consumer, not waiting for the producer")
	}
}

// dialAndSend opens a consumer's connection with a small receive window
// to the harness and sends a run on it, reading nothing.
func dialAndSend(t *testing.T, h *harness) net.Conn {
	t.Helper()
	conn := dialSmallWindow(t, strings.TrimPrefix(h.url, "http://"))
	t.Cleanup(func() { conn.Close() })
	testkit.SendRun(t, conn, testkit.MinimalInput)
	return conn
}

// A consumer that reads nothing while the producer keeps sending is cut
// after the consumer stall timeout: counted and logged as
// consumer_stalled, not consumer_gone, the producer's request cancelled,
// the consumer's connection closed, nothing left behind. The idle timeout,
// shorter here, does not end the run first: the producer is not silent,
// it waits behind the consumer.
func TestStalledConsumerIsCut(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		const stall = time.Second
		cancelled := make(chan struct{})
		h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
			defer close(cancelled)
			testkit.StreamHeaders(w)
			testkit.SSE(w, testkit.RunStarted)
			for i := 0; ; i++ {
				if _, err := io.WriteString(w, seqEvent(i)); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}, func(r *Relay) {
			configure(r)
			r.ConsumerStallTimeout, r.IdleTimeout = stall, 250*time.Millisecond
		})
		base, baseFDs := runGoroutines(), openFDs(t)
		conn := dialAndSend(t, h)
		awaitRelayWriteWaits(t)
		awaitIdleCheckWhileWriting(t, onlyRun(t, h.relay))

		rep := h.report()
		if rep.Abort != CodeConsumerStalled || rep.Err != nil || rep.Terminal != "" {
			t.Errorf("report: abort %q, err %v, terminal %q; want consumer_stalled, no error, no terminal", rep.Abort, rep.Err, rep.Terminal)
		}
		if rep.Duration < stall-stall/8 {
			t.Errorf("cut after %v, before the stall timeout (%v, within an eighth)", rep.Duration, stall)
		}
		testkit.Await(t, cancelled, "the producer's request was not cancelled")
		lines := h.logs.FilterMessage("run ended by the relay").FilterField(zap.String("abort", CodeConsumerStalled))
		if lines.Len() != 1 {
			t.Errorf("%d WARN lines with abort consumer_stalled, want 1: %v", lines.Len(), h.logs.All())
		}
		// What the relay had written is there to read, then the end: the
		// connection was closed, with no RUN_ERROR after the events.
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err == nil || !strings.Contains(string(body), `"name":"seq"`) || strings.Contains(string(body), "RUN_ERROR") {
			t.Errorf("the consumer read %d bytes ending %q, then %v; want events, then a cut chunked body", len(body), body[max(0, len(body)-40):], err)
		}
		conn.Close()
		h.consumer.Transport.(*http.Transport).CloseIdleConnections()
		waitGoroutines(t, base)
		waitFDs(t, baseFDs)
	})
}

// A consumer that pauses longer than the idle timeout, while the producer
// has more to send, loses nothing: the time the relay is blocked writing
// to it is not the producer's silence, and once it reads again every event
// arrives, in order, and the run ends finished.
func TestPausedConsumerOutlivesTheIdleTimeout(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		const events = 8 << 10 // 8 MiB: more than the sockets' buffers between the relay and the consumer
		h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
			testkit.StreamHeaders(w)
			testkit.SSE(w, testkit.RunStarted)
			for i := range events {
				if _, err := io.WriteString(w, seqEvent(i)); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			testkit.SSE(w, testkit.RunFinished)
		}, func(r *Relay) {
			configure(r)
			r.ConsumerStallTimeout, r.IdleTimeout = time.Minute, 250*time.Millisecond
		})
		conn := dialAndSend(t, h)
		awaitRelayWriteWaits(t)
		awaitIdleCheckWhileWriting(t, onlyRun(t, h.relay))

		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		next, finished := 0, false
		for {
			line, err := br.ReadString('\n')
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			finished = finished || strings.Contains(line, "RUN_FINISHED")
			if i := strings.Index(line, `"value":`); i >= 0 && strings.Contains(line, `"name":"seq"`) {
				v := line[i+len(`"value":`):]
				if v = v[:strings.IndexByte(v, ',')]; v != strconv.Itoa(next) {
					t.Fatalf("event %s where %d was due", v, next)
				}
				next++
			}
		}
		if next != events || !finished {
			t.Errorf("%d events of %d arrived, RUN_FINISHED %v", next, events, finished)
		}
		if rep := h.report(); rep.Terminal != "RUN_FINISHED" || rep.Abort != "" {
			t.Errorf("report: terminal %q, abort %q", rep.Terminal, rep.Abort)
		}
	})
}

// A consumer that reads while the producer falls silent is governed by
// the idle timeout alone, however short the stall timeout: nothing waits
// to be written, so nothing stalls.
func TestSilentProducerIsNotAStalledConsumer(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		const idle = 200 * time.Millisecond
		h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
			testkit.StreamHeaders(w)
			testkit.SSE(w, testkit.RunStarted)
			<-r.Context().Done()
		}, func(r *Relay) {
			configure(r)
			r.ConsumerStallTimeout, r.IdleTimeout = 20*time.Millisecond, idle
		})
		if ev := runErrorOf(t, testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))); ev["code"] != CodeUpstreamIdleTimeout {
			t.Errorf("RUN_ERROR %v", ev)
		}
		if rep := h.report(); rep.Abort != CodeUpstreamIdleTimeout || rep.Duration < idle {
			t.Errorf("report: abort %q after %v; want upstream_idle_timeout after the idle timeout (%v)", rep.Abort, rep.Duration, idle)
		}
	})
}

// A consumer that stops reading and then goes away, before the stall
// timeout, went away: consumer_gone, the producer's request cancelled at
// once, not at the stall timeout.
func TestStalledConsumerThatLeavesIsGone(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		var cancelled atomic.Bool
		done := make(chan struct{})
		h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			testkit.StreamHeaders(w)
			testkit.SSE(w, testkit.RunStarted)
			for i := 0; ; i++ {
				if _, err := io.WriteString(w, seqEvent(i)); err != nil {
					cancelled.Store(true)
					return
				}
				w.(http.Flusher).Flush()
			}
		}, func(r *Relay) {
			configure(r)
			r.ConsumerStallTimeout = time.Hour // only the consumer's close can end the run in time
		})
		conn := dialAndSend(t, h)
		awaitRelayWriteWaits(t)
		conn.Close() // with unread bytes: a reset
		rep := h.report()
		if rep.Abort != CodeConsumerGone {
			t.Errorf("report: abort %q, want consumer_gone", rep.Abort)
		}
		testkit.Await(t, done, "the producer's request was not cancelled")
		if !cancelled.Load() {
			t.Error("the producer's stream ended without its write failing")
		}
		if n := h.logs.FilterField(zap.String("abort", CodeConsumerStalled)).Len(); n != 0 {
			t.Errorf("%d lines say consumer_stalled", n)
		}
	})
}

// largeEventSize is the event of largeEventRun: 4 MiB, far larger than
// the sockets' buffers between the relay and the consumer.
const largeEventSize = 4 << 20

// largeEventRun sends a run, on a consumer's connection that reads nothing
// yet, to a relay whose producer responds with an event of largeEventSize
// and whose stall limit is 300 ms, configured further by configure.
func largeEventRun(t *testing.T, configure func(*Relay)) (*harness, net.Conn) {
	t.Helper()
	h := newHarnessOn(t, largeEventProducer(largeEventSize), func(r *Relay) {
		configure(r)
		r.ConsumerStallTimeout = 300 * time.Millisecond
	}, smallSendBuffers)
	return h, dialAndSend(t, h)
}

// largeEventProducer responds to a run with RUN_STARTED, one CUSTOM event of
// about size bytes, and RUN_FINISHED.
func largeEventProducer(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted)
		io.WriteString(w, largeEvent(size)) //nolint:errcheck // the test reads what arrived
		testkit.SSE(w, testkit.RunFinished)
	}
}

// largeEvent is a CUSTOM event of about size bytes.
func largeEvent(size int) string {
	return `data: {"type":"CUSTOM","name":"large","value":"` + strings.Repeat("l", size) + `"}` + "\n\n"
}

// smallSendBuffers is the relay's Listener whose connections have a
// 64 KiB send buffer (as set, the kernel doubles it), so that what the
// relay can write ahead of a consumer does not depend on the kernel's
// tuning: a large event goes out only as the consumer reads it.
func smallSendBuffers(ln net.Listener) net.Listener { return Listener(sendBufferListener{ln}) }

type sendBufferListener struct{ net.Listener }

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setSendBuffer(fd, 64<<10) }); err != nil || serr != nil {
		c.Close()
		return nil, fmt.Errorf("SO_SNDBUF: %v %v", err, serr)
	}
	return c, nil
}

// pacedReader reads at most piece bytes a read, each gap after the last:
// a consumer that reads slowly but steadily. The wait paces the reads; it
// synchronises nothing.
type pacedReader struct {
	r     io.Reader
	piece int
	gap   time.Duration
	read  int // bytes read so far
	stop  int // when positive, the bytes after which it reads no more (it returns io.EOF)
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.stop > 0 && p.read >= p.stop {
		return 0, io.EOF
	}
	time.Sleep(p.gap)
	n, err := p.r.Read(b[:min(len(b), p.piece)])
	p.read += n
	return n, err
}

// A consumer that reads a large event slowly but steadily is not stalled:
// the stall timeout counts from the last byte it took, not from the start
// of the write that holds the event. Here it reads at most 32 KiB every
// 10 ms against a 300 ms limit, and the 4 MiB event, far larger than the
// sockets' buffers between them, takes over a second to go out. Before,
// the whole write was bounded by the limit and the run was cut as
// consumer_stalled in the middle of the event.
func TestSteadyConsumerOfALargeEventIsNotStalled(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		h, conn := largeEventRun(t, configure)
		resp, err := http.ReadResponse(bufio.NewReader(&pacedReader{r: conn, piece: 32 << 10, gap: 10 * time.Millisecond}), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("the response was cut after %d bytes of its body: %v", len(body), err)
		}
		if !strings.Contains(string(body), largeEvent(largeEventSize)) || !strings.Contains(string(body), "RUN_FINISHED") {
			t.Errorf("the consumer read %d bytes, without the whole event and RUN_FINISHED", len(body))
		}
		if rep := h.report(); rep.Terminal != "RUN_FINISHED" || rep.Abort != "" {
			t.Errorf("report: terminal %q, abort %q; want RUN_FINISHED, no abort", rep.Terminal, rep.Abort)
		}
	})
}

// A consumer that reads part of a large event and then stops is still cut
// at the stall timeout: the bytes it took earlier do not hold it off.
func TestConsumerThatStopsInsideALargeEventIsCut(t *testing.T) {
	pollerModes(t, func(t *testing.T, configure func(*Relay)) {
		h, conn := largeEventRun(t, configure)
		paced := &pacedReader{r: conn, piece: 32 << 10, gap: 10 * time.Millisecond, stop: 512 << 10}
		io.Copy(io.Discard, paced) //nolint:errcheck // reads 512 KiB, then stops
		rep := h.report()
		if rep.Abort != CodeConsumerStalled || rep.Terminal != "" {
			t.Errorf("report: abort %q, terminal %q; want consumer_stalled, no terminal", rep.Abort, rep.Terminal)
		}
		if n, _ := io.Copy(io.Discard, conn); paced.read+int(n) >= largeEventSize {
			t.Errorf("the consumer could read %d bytes after it stopped, the whole event", n)
		}
	})
}
