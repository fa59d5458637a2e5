//go:build linux

package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// These tests are issue 39's item 4: bytes a producer sends after its
// response, too late for the check a pooled connection gets before its
// reuse (reusableConn), must not be read as the next request's response.

// requestSeen is a request as a producer read it: on which of its
// connections (1 for the first accepted), and whether it asked for the
// connection's close.
type requestSeen struct {
	conn  int
	path  string
	close bool
}

// producerLog is what a producer accepted and read, in order.
type producerLog struct {
	mu    sync.Mutex
	conns int
	reqs  []requestSeen
}

func (l *producerLog) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns++
	return l.conns
}

func (l *producerLog) saw(conn int, req *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, requestSeen{conn, req.URL.Path, req.Close})
}

func (l *producerLog) seen() (conns int, reqs []requestSeen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, append([]requestSeen(nil), l.reqs...)
}

// owingProducer is a raw producer that answers each request with now and
// then owes the connection later, from respond(req). It writes what it
// owes as when says: "next" (in front of its response to the connection's
// next request: bytes that arrive after the relay checked the connection
// and while it wrote that request, which no check can tell from the
// request's response), or "late" (once late is closed, and then sends the
// connection on written).
func owingProducer(t *testing.T, when string, late <-chan struct{}, written chan<- *net.TCPConn, respond func(*http.Request) (now, later string)) (string, *producerLog) {
	log := &producerLog{}
	return "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		n := log.accepted()
		br := bufio.NewReader(c)
		owed := ""
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			log.saw(n, req)
			now, later := respond(req)
			io.Copy(io.Discard, req.Body) //nolint:errcheck
			io.WriteString(c, owed+now)   //nolint:errcheck
			owed = ""
			switch {
			case later == "":
			case when == "next":
				owed = later
			default:
				<-late
				io.WriteString(c, later) //nolint:errcheck // the relay may have closed the connection
				written <- c.(*net.TCPConn)
			}
		}
	}), log
}

// reuseRelay is a relay in front of upstream whose pooled connections stay
// for the whole test, with noReuse as ClientOptions.NoReuse.
func reuseRelay(t *testing.T, upstream string, noReuse bool) string {
	addr, _ := rawRelay(t, upstream, nil, func(r *Relay) {
		r.Client = NewClient(ClientOptions{MaxIdleConnDuration: time.Minute, NoReuse: noReuse, Log: zap.NewNop()})
	})
	return addr
}

// A response that may carry no body, by its method (HEAD) or its status
// (204, 304), whose producer sends a body anyway (Python's http.server
// with do_HEAD = do_GET) just after the relay's check of the pooled
// connection, reaches no other request: the connection is not reused, and
// the next run gets its own events on a new one.
func TestNoBodyResponseConnectionIsNeverReused(t *testing.T) {
	const body = "LATE-BODY"
	for _, c := range []struct{ method, path, header string }{
		{"HEAD", "/head", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\n"},
		{"GET", "/no-content", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"GET", "/not-modified", "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 9\r\n\r\n"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			upstream, log := owingProducer(t, "next", nil, nil, func(req *http.Request) (string, string) {
				if req.URL.Path == c.path {
					return c.header, body
				}
				return ownResponse(t, "chunked", req), ""
			})
			addr := reuseRelay(t, upstream, false)

			resp, got := requestOn(t, addr, c.method, c.path)
			if status := strings.Fields(c.header)[1]; resp.Status[:3] != status || got != "" {
				t.Fatalf("%s %s: %s %q, want %s without a body", c.method, c.path, resp.Status, got, status)
			}
			if got := runOn(t, addr, "B"); got != runEvents("B") {
				t.Fatalf("run B read\n%q\nwant its own events", got)
			}
			if conns, reqs := log.seen(); conns != 2 || len(reqs) != 2 || reqs[1].conn != 2 {
				t.Errorf("the producer accepted %d connections and read %+v: want run B on a second connection", conns, reqs)
			}
		})
	}
}

// An extra full response a producer sends after a complete one, on a persistent
// connection: with --upstream-reuse never each request goes out on a new
// connection, asking for its close, and no run reads another's response,
// whether the extra response comes late (the relay has closed the
// connection) or would come in front of the next request's own. With
// always (the default) a response arriving while the connection sits in
// the pool is found before its reuse (TestUnsolicitedResponseReachesNoOtherRun),
// but one arriving after that check is read as the next request's: the
// window docs/reliability.md states, shown here.
func TestUpstreamReuseNeverGivesEachRequestItsOwnConnection(t *testing.T) {
	stale := responseOf("content-length", "text/event-stream", runEvents("STALE"))
	for _, when := range []string{"late", "next"} {
		for _, noReuse := range []bool{false, true} {
			name := map[bool]string{false: "always", true: "never"}[noReuse] + ", " + when
			t.Run(name, func(t *testing.T) {
				late, written := make(chan struct{}), make(chan *net.TCPConn, 1)
				var once sync.Once
				upstream, log := owingProducer(t, when, late, written, func(req *http.Request) (string, string) {
					later := ""
					once.Do(func() { later = stale }) // after run A's response only
					return ownResponse(t, "chunked", req), later
				})
				addr := reuseRelay(t, upstream, noReuse)

				if got := runOn(t, addr, "A"); got != runEvents("A") {
					t.Fatalf("run A read %q", got)
				}
				if when == "late" {
					close(late)
					pc := testkit.Await(t, written, "the extra response was not written")
					if !noReuse {
						awaitDelivered(t, pc) // in the relay's socket before run B's check
					}
				}
				if !noReuse && when == "next" {
					// The window: the extra response came after the check
					// and is read as run B's own. Only never closes it.
					if got := runOn(t, addr, "B"); got != runEvents("STALE") {
						t.Fatalf("run B read\n%q\nwant the extra response: the test no longer shows the window", got)
					}
					return
				}
				for _, run := range []string{"B", "C"} {
					if got := runOn(t, addr, run); got != runEvents(run) {
						t.Fatalf("run %s read\n%q\nwant its own events", run, got)
					}
				}
				if !noReuse {
					return
				}
				conns, reqs := log.seen()
				if conns != 3 || len(reqs) != 3 {
					t.Fatalf("the producer accepted %d connections for the requests %+v, want 3 for 3", conns, reqs)
				}
				for i, r := range reqs {
					if r.conn != i+1 || !r.close {
						t.Errorf("request %d: %+v, want connection %d and Connection: close", i+1, r, i+1)
					}
				}
			})
		}
	}
}
