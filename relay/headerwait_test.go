//go:build linux

package relay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
)

// thinkingProducer never answers a run whose input names runId "think":
// it tells waiting of each such request and closed once the relay closes
// its connection. Any other run is answered with a short run at once.
// Its cleanup (also returned, for a test to run before the relay's
// shutdown, which waits for the handlers) closes every connection.
func thinkingProducer(t *testing.T) (url string, waiting, closed chan struct{}, closeAll func()) {
	t.Helper()
	waiting, closed = make(chan struct{}, 64), make(chan struct{}, 64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	closeAll = func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(closeAll)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					if strings.Contains(string(b), `"runId":"think"`) {
						waiting <- struct{}{}
						io.Copy(io.Discard, br) //nolint:errcheck // thinking, until the relay lets go
						closed <- struct{}{}
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+
						strconv.Itoa(len(shortRunEvents))+"\r\n\r\n"+shortRunEvents)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), waiting, closed, closeAll
}

// A consumer that hangs up while the producer thinks, before the header of
// its response, has the producer's request cancelled at once: the producer's
// connection is closed, the run counted as consumer_gone (never finished)
// and runs_active back to 0, and the abandoned requests hold none of
// --upstream-max-conns, so the next real run is served (issue #24, item 1).
func TestConsumerGoneBeforeTheHeaderCancelsTheProducer(t *testing.T) {
	url, waiting, closed, closeAll := thinkingProducer(t)
	taps := &countingTaps{}
	reports := make(chan *RunReport, 16)
	addr, _ := rawRelay(t, url, reportsTo(reports), func(r *Relay) {
		r.Client = NewClient(ClientOptions{MaxConns: 2, FirstByteTimeout: time.Hour})
		r.Tap = taps.Tap
	})
	t.Cleanup(closeAll) // before the relay's shutdown, should a request be left waiting
	think := `{"threadId":"t1","runId":"think","messages":[],"protocolVersion":"1.0"}`
	for i := range 4 { // twice the cap: each abandoned request must free its connection
		c := testkit.DialConsumer(t, addr)
		testkit.SendRun(t, c, think)
		testkit.Await(t, waiting, fmt.Sprintf("abandoned run %d: the producer never got the request", i))
		c.Close()
		testkit.Await(t, closed, fmt.Sprintf("abandoned run %d: the producer's connection stays open after the consumer left", i))
		var rep *RunReport
		rep = testkit.Await(t, reports, fmt.Sprintf("abandoned run %d: no report", i))
		if rep.Abort != "consumer_gone" || rep.Terminal != "" || rep.RunID != "think" {
			t.Errorf("abandoned run %d: abort %q, terminal %q, run %q; want consumer_gone, no terminal", i, rep.Abort, rep.Terminal, rep.RunID)
		}
	}
	// Every run's taps were ended (the metrics' runs_active back to 0),
	// none of them streaming.
	if started, ended, streamed := taps.counts(); started != 4 || ended != 4 || streamed != 0 {
		t.Errorf("taps: %d started, %d ended, %d streamed; want 4, 4, 0", started, ended, streamed)
	}

	// The cap of 2 is free: a real run is served.
	c := testkit.DialConsumer(t, addr)
	testkit.SendRun(t, c, `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`)
	resp, body := testkit.ReadResponse(t, c)
	if resp.StatusCode != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Errorf("the run after the abandoned ones: %d %q", resp.StatusCode, body)
	}
}

// countingTaps counts the runs tapped, the taps ended and the runs that
// streamed, as the metrics' runs_active and outcomes would.
type countingTaps struct {
	mu                       sync.Mutex
	started, ended, streamed int
}

func (c *countingTaps) Tap(*RunReport) RunTap {
	c.mu.Lock()
	c.started++
	c.mu.Unlock()
	return countingTap{c: c}
}

func (c *countingTaps) counts() (started, ended, streamed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started, c.ended, c.streamed
}

type countingTap struct {
	NopTap
	c *countingTaps
}

func (t countingTap) Streaming(negotiate.Version, negotiate.Version) {
	t.c.mu.Lock()
	t.c.streamed++
	t.c.mu.Unlock()
}
func (t countingTap) End(*RunReport) {
	t.c.mu.Lock()
	t.c.ended++
	t.c.mu.Unlock()
}

// A consumer that shuts its write side after its request (a half-close) is
// treated as gone, as nginx treats it: a socket's FIN cannot be told from
// a close until a write fails, and waiting for that would leave the
// producer's request to a consumer that left running. The producer's
// request is cancelled, the run counted consumer_gone, and the consumer
// reads nothing (issue #24, item 6).
func TestHalfClosedConsumerIsGone(t *testing.T) {
	url, waiting, closed, closeAll := thinkingProducer(t)
	reports := make(chan *RunReport, 4)
	addr, _ := rawRelay(t, url, reportsTo(reports), func(r *Relay) {
		r.Client = NewClient(ClientOptions{FirstByteTimeout: time.Hour})
	})
	t.Cleanup(closeAll)
	c := testkit.DialConsumer(t, addr)
	testkit.SendRun(t, c, `{"threadId":"t1","runId":"think","messages":[],"protocolVersion":"1.0"}`)
	testkit.Await(t, waiting, "the producer never got the request")
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, closed, "the producer's request goes on for a half-closed consumer")
	if rep := testkit.Await(t, reports, "no run report"); rep.Abort != "consumer_gone" {
		t.Errorf("abort %q, want consumer_gone", rep.Abort)
	}
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Errorf("the consumer read %q (%v), want the connection closed with nothing", b, err)
	}
}
