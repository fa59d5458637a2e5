//go:build linux

package relay

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// These tests are issue 39's item 5: a producer that answers before it has
// read the request's body (a gateway's 413 or 401 on the header of a large
// body) has that response relayed at once, whether it then closes the
// connection or leaves it open without reading.

// earlyProducer reads each request's header only and answers 413 at once,
// then closes the connection ("close") or leaves it open without reading
// until released is closed, when it reads what is left and sends the
// error its read ended with (the relay closed the connection) on ended.
func earlyProducer(t *testing.T, then string, released <-chan struct{}, ended chan<- error) string {
	return "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"error\":\"too large\"}") //nolint:errcheck
		if then == "close" {
			return
		}
		<-released
		_, err := io.Copy(io.Discard, c)
		ended <- err
	})
}

// earlyDeadline is the consumer's deadline in these tests: well before
// the relay's first-byte timeout (a minute), so that a relay that waits
// for it fails the test, and before the test's own deadline.
func earlyDeadline(t *testing.T) time.Time {
	d := time.Now().Add(20 * time.Second)
	if td, ok := t.Deadline(); ok && td.Add(-time.Second).Before(d) {
		d = td.Add(-time.Second)
	}
	return d
}

// A run whose 8 MiB input the producer refuses with 413 on its header,
// before reading it, gets that 413 and its body long before the
// first-byte timeout, whether the producer then closes or leaves the
// connection open without reading; that connection is closed, not
// reused.
func TestEarlyResponseReachesTheConsumer(t *testing.T) {
	for _, then := range []string{"close", "open"} {
		t.Run(then, func(t *testing.T) {
			released, ended := make(chan struct{}), make(chan error, 1)
			upstream := earlyProducer(t, then, released, ended)
			addr, _ := rawRelay(t, upstream, nil, func(r *Relay) {
				r.Client = NewClient(ClientOptions{FirstByteTimeout: time.Minute, MaxIdleConnDuration: time.Minute})
			})

			c := testkit.DialConsumer(t, addr)
			c.SetDeadline(earlyDeadline(t)) //nolint:errcheck
			testkit.SendRun(t, c, largeInput("r1"))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("the producer's 413 did not come before the consumer's deadline: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != `{"error":"too large"}` {
				t.Fatalf("got %d %q (%v), want the producer's 413 and its body", resp.StatusCode, body, err)
			}
			if then == "open" {
				close(released)
				// The relay closed the connection: the producer's read
				// ends (a reset for bytes it left unread, or the end).
				if err := testkit.Await(t, ended, "the producer's connection was not closed"); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
					t.Errorf("the producer's read ended with %v", err)
				}
			}
		})
	}
}

// largeInput is a run's input of over 8 MiB, more than the socket buffers
// between the relay and a producer hold: its write blocks while the
// producer reads none of it.
func largeInput(runID string) string {
	return `{"threadId":"t1","runId":"` + runID + `","protocolVersion":"1.0","messages":[{"id":"m1","role":"user","content":"` +
		strings.Repeat("x", 8<<20) + `"}]}`
}

// A run whose input is written while its response is awaited (over
// writeFirst) and read in full by the producer streams as any run does,
// and its connection carries the next run.
func TestLargeInputStreamsAndItsConnectionIsReused(t *testing.T) {
	upstream, log := owingProducer(t, "next", nil, nil, func(req *http.Request) (string, string) {
		return ownResponse(t, "chunked", req), ""
	})
	addr := reuseRelay(t, upstream, false)
	for _, run := range []string{"A", "B"} {
		c := testkit.DialConsumer(t, addr)
		testkit.SendRun(t, c, largeInput(run))
		if resp, got := testkit.ReadResponse(t, c); resp.StatusCode != http.StatusOK || got != runEvents(run) {
			t.Fatalf("run %s: %d %q, want its own events", run, resp.StatusCode, got)
		}
		settled(t, c)
	}
	if conns, reqs := log.seen(); conns != 1 || len(reqs) != 2 {
		t.Errorf("the producer accepted %d connections for %d requests, want 1 for 2", conns, len(reqs))
	}
}

// A consumer that hangs up while its large input is still being written to
// a producer that reads none of it has the write cut, the run counted
// consumer_gone at once (not at the first-byte timeout), and the
// producer's connection closed: the producer, reading at last, finds its
// end.
func TestConsumerGoneWhileALargeInputIsWritten(t *testing.T) {
	accepted, released, ended := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	upstream := "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		close(accepted)
		<-released
		_, err := io.Copy(io.Discard, c)
		ended <- err
	})
	reports := make(chan *RunReport, 1)
	addr, _ := rawRelay(t, upstream, func(rep *RunReport) { reports <- rep }, func(r *Relay) {
		r.Client = NewClient(ClientOptions{FirstByteTimeout: time.Minute, MaxIdleConnDuration: time.Minute})
	})
	c := testkit.DialConsumer(t, addr)
	testkit.SendRun(t, c, largeInput("r1"))
	testkit.Await(t, accepted, "the producer was not sent the request")
	c.Close()
	if rep := testkit.Await(t, reports, "the run did not end when its consumer hung up"); rep.Abort != CodeConsumerGone {
		t.Errorf("the run's abort %q, want %q", rep.Abort, CodeConsumerGone)
	}
	close(released)
	if err := testkit.Await(t, ended, "the producer's connection was not closed"); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Errorf("the producer's read ended with %v", err)
	}
}

// The first-byte timeout of a large input, whose response is read while
// it is written, still counts from the end of the write, as for an input
// written first: a producer that takes half the timeout to start reading
// the input and answers most of a timeout after it has read it, past the
// timeout counted from the request's start, is answered 200. (The
// producer's pauses are its behaviour, in seconds so that a busy machine
// keeps the order.)
func TestFirstByteTimeoutCountsFromTheEndOfALargeWrite(t *testing.T) {
	const timeout = 3 * time.Second
	upstream := "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		time.Sleep(timeout / 2)
		io.Copy(io.Discard, req.Body) //nolint:errcheck
		time.Sleep(timeout * 3 / 4)
		io.WriteString(c, responseOf("content-length", "text/event-stream", runEvents("r1"))) //nolint:errcheck
		io.Copy(io.Discard, c)                                                                //nolint:errcheck // until the relay closes
	})
	addr, _ := rawRelay(t, upstream, nil, func(r *Relay) {
		r.Client = NewClient(ClientOptions{FirstByteTimeout: timeout})
	})
	c := testkit.DialConsumer(t, addr)
	testkit.SendRun(t, c, largeInput("r1"))
	if resp, got := testkit.ReadResponse(t, c); resp.StatusCode != http.StatusOK || got != runEvents("r1") {
		t.Fatalf("%d %q, want the run's events", resp.StatusCode, got)
	}
}
