//go:build unix

package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"go.uber.org/zap"
)

// capturingListener hands out the relay's raw consumer connections, for a
// test to count the writes made on them.
type capturingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*socketConn
}

func (l *capturingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if sc, ok := c.(*socketConn); ok {
		sc.CountWrites()
		l.mu.Lock()
		l.conns = append(l.conns, sc)
		l.mu.Unlock()
	}
	return c, err
}

// coalescingRelay serves a relay in front of upstream and returns its
// address, its consumers' connections and its run reports.
func coalescingRelay(t *testing.T, upstream string) (addr string, ln *capturingListener, reports chan *RunReport) {
	t.Helper()
	reports = make(chan *RunReport, 4)
	addr, ln = rawRelay(t, upstream, func(rep *RunReport) { reports <- rep })
	return addr, ln, reports
}

// rawRelay serves a relay in front of upstream on the relay's Listener,
// calling onRun at the end of each run, configured further by configure,
// and returns its address and its consumers' connections.
func rawRelay(t *testing.T, upstream string, onRun func(*RunReport), configure ...func(*Relay)) (addr string, ln *capturingListener) {
	t.Helper()
	r := &Relay{
		Upstream:        upstream,
		Client:          NewClient(ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond}),
		Log:             zap.NewNop(),
		Poller:          testPoller(t),
		ReuseGoroutines: reusing(),
	}
	for _, c := range configure {
		c(r)
	}
	r.Tap = onEnd(r.Tap, onRun)
	addr = testkit.Serve(t, r.Server(), func(l net.Listener) net.Listener {
		ln = &capturingListener{Listener: Listener(l)}
		return ln
	})
	return addr, ln
}

const shortRunEvents = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"protocolVersion\":\"1.0\"}\n\n" +
	"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m1\",\"role\":\"assistant\"}\n\n" +
	"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"hi\"}\n\n" +
	"data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m1\"}\n\n" +
	"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n"

// postRaw sends a run's request on c and returns a reader of the response.
func postRaw(t *testing.T, c net.Conn) *bufio.Reader {
	t.Helper()
	testkit.SendRun(t, c, testkit.MinimalInput)
	return bufio.NewReader(c)
}

// A short run whose whole response the producer sent at once is answered
// with one write: the header, the events and the body's end together, where
// it took three (the header, the chunk, the end), each a segment the
// consumer's kernel and reader handle.
func TestWholeShortResponseGoesOutInOneWrite(t *testing.T) {
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHeader+"\r\n"+chunk(shortRunEvents)+"0\r\n\r\n") //nolint:errcheck
	})
	addr, ln, reports := coalescingRelay(t, upstream)
	c := testkit.DialConsumer(t, addr)
	resp, err := http.ReadResponse(postRaw(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(body) != shortRunEvents {
		t.Fatalf("response %d %q", resp.StatusCode, body)
	}
	select {
	case <-reports: // the stream has ended: every write is made
	case <-time.After(testkit.Liveness):
		t.Fatal("no run report")
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.conns) != 1 {
		t.Fatalf("%d consumer connections", len(ln.conns))
	}
	sc := ln.conns[0]
	want := 1
	if raceDetector {
		// The race detector's build writes piece by piece (wire.WritevFD): the
		// header, the size line, the events, the CRLF and end.
		want = 4
	}
	if w := sc.Writes(); w != want {
		t.Fatalf("the response took %d writes, want %d", w, want)
	}
}

// The header is not held back for events that have not come: a producer
// that sends its header and then waits (an agent thinking) has the header
// reach the consumer before its first event.
func TestHeaderGoesOutBeforeLateEvents(t *testing.T) {
	headerSeen := make(chan struct{})
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHeader+"\r\n") //nolint:errcheck
		select {
		case <-headerSeen:
		case <-time.After(testkit.Liveness):
		}
		io.WriteString(c, chunk(shortRunEvents)+"0\r\n\r\n") //nolint:errcheck
	})
	addr, _, _ := coalescingRelay(t, upstream)
	c := testkit.DialConsumer(t, addr)
	resp, err := http.ReadResponse(postRaw(t, c), nil)
	if err != nil {
		t.Fatalf("no header while the producer waits: %v", err)
	}
	close(headerSeen)
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != shortRunEvents {
		t.Fatalf("body %q: %v", body, err)
	}
}
