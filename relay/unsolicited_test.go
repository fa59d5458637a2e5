//go:build linux

package relay

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// These tests are issue 31's: a producer that sends bytes outside any
// response (an unsolicited second response on a persistent connection)
// must not shift the responses of later requests onto other consumers. The producer
// is a raw socket; the relay is in front of it, the consumers are raw
// sockets too.

// responseOf is an HTTP/1.1 response with body, framed by Content-Length or
// chunked (in two chunks).
func responseOf(framing, contentType, body string) string {
	header := "HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\n"
	if framing == "chunked" {
		half := len(body) / 2
		return header + "Transfer-Encoding: chunked\r\n\r\n" +
			strconv.FormatInt(int64(half), 16) + "\r\n" + body[:half] + "\r\n" +
			strconv.FormatInt(int64(len(body)-half), 16) + "\r\n" + body[half:] + "\r\n0\r\n\r\n"
	}
	return header + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// ownResponse is the producer's response to req: a run's events for the runId
// of its input, a GET's path as text.
func ownResponse(t *testing.T, framing string, req *http.Request) string {
	if req.Method == http.MethodHead {
		a := responseOf("content-length", "text/plain", req.URL.Path)
		return a[:strings.Index(a, "\r\n\r\n")+4]
	}
	if req.Method != http.MethodPost {
		return responseOf(framing, "text/plain", req.URL.Path)
	}
	var in struct {
		RunID string `json:"runId"`
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		t.Errorf("the producer reading the input: %v", err)
	}
	return responseOf(framing, "text/event-stream", runEvents(in.RunID))
}

// unsolicitedProducer is a raw producer that responds to each request with
// its own response (ownResponse) and follows the first response it gives
// with extra, as when says: "same read" (in the write of the response's
// end), "late" (once read is closed: the response was read and the
// connection sits idle), "split" (its first half in the write of the
// response's end, the rest late), or "close" (nothing; the producer ends
// the connection late). Once the last of it is written it sends its end of
// the connection on written.
func unsolicitedProducer(t *testing.T, framing, when, extra string, read <-chan struct{}, written chan<- *net.TCPConn) string {
	var once sync.Once
	return "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			resp := ownResponse(t, framing, req)
			io.Copy(io.Discard, req.Body) //nolint:errcheck
			first := false
			once.Do(func() { first = true })
			if !first {
				io.WriteString(c, resp) //nolint:errcheck
				continue
			}
			now, later := "", extra
			switch when {
			case "same read":
				now, later = extra, ""
			case "split":
				now, later = extra[:len(extra)/2], extra[len(extra)/2:]
			}
			io.WriteString(c, resp+now) //nolint:errcheck
			if when != "same read" {
				<-read
			}
			if when == "close" {
				c.(*net.TCPConn).CloseWrite() //nolint:errcheck
				written <- c.(*net.TCPConn)
				io.Copy(io.Discard, c) //nolint:errcheck // responding no more, until the relay closes
				return
			}
			io.WriteString(c, later) //nolint:errcheck
			written <- c.(*net.TCPConn)
		}
	})
}

// awaitDelivered waits until the peer of c has acknowledged everything c
// sent (its FIN included): the bytes are in the relay's socket, readable.
func awaitDelivered(t *testing.T, c *net.TCPConn) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the producer's bytes acknowledged by the relay", func() bool {
		var queued int32
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued)))
		}); err != nil || errno != 0 {
			t.Fatalf("TIOCOUTQ: %v %v", err, errno)
		}
		return queued == 0
	})
}

// unsolicitedReport is a call of ClientOptions.OnUnsolicited.
type unsolicitedReport struct {
	addr string
	n    int
}

// unsolicitedRelay is a relay in front of upstream whose client reports
// unsolicited bytes to the returned channel and logs to the returned logs.
// Its pooled connections stay for the whole test.
func unsolicitedRelay(t *testing.T, upstream string) (addr string, reports chan unsolicitedReport, logs *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	reports = make(chan unsolicitedReport, 8)
	addr, _ = rawRelay(t, upstream, nil, func(r *Relay) {
		r.Client = NewClient(ClientOptions{
			MaxIdleConnDuration: time.Minute,
			Log:                 zap.New(core),
			OnUnsolicited:       func(addr string, n int) { reports <- unsolicitedReport{addr, n} },
		})
	})
	return addr, reports, logs
}

// runOn sends the run runID on a consumer connection of its own and returns
// the body of its response, once the relay is done with the response
// (settled).
func runOn(t *testing.T, addr, runID string) string {
	t.Helper()
	c := testkit.DialConsumer(t, addr)
	testkit.SendRun(t, c, `{"threadId":"t1","runId":"`+runID+`","messages":[],"protocolVersion":"1.0"}`)
	_, body := testkit.ReadResponse(t, c)
	settled(t, c)
	return body
}

// settled waits until the relay is done with the last response on the
// consumer's connection c, its producer connection back in the pool: the
// consumer may read a response's end before the relay has released the
// producer's, but the relay reads c's next request only after. That
// request (an asterisk-form target) it answers itself, with 400.
func settled(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.WriteString(c, "OPTIONS * HTTP/1.1\r\nHost: relay\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := testkit.ReadResponse(t, c); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("OPTIONS *: %d, want 400", resp.StatusCode)
	}
}

// requestOn sends a request without a body on a consumer connection of
// its own and returns its response and the response's body.
func requestOn(t *testing.T, addr, method, path string) (*http.Response, string) {
	t.Helper()
	c := testkit.DialConsumer(t, addr)
	if _, err := io.WriteString(c, method+" "+path+" HTTP/1.1\r\nHost: relay\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	settled(t, c)
	return resp, string(b)
}

// checkUnsolicitedReported checks that the unsolicited bytes were reported
// once, with their count and the producer's address, in the log (WARN) and
// to OnUnsolicited, and that the producer is named in neither by its bytes.
func checkUnsolicitedReported(t *testing.T, upstream string, reports chan unsolicitedReport, logs *observer.ObservedLogs, n int) {
	t.Helper()
	producer := strings.TrimPrefix(upstream, "http://")
	got := testkit.Await(t, reports, "the unsolicited bytes were not reported (OnUnsolicited)")
	if got.addr != producer || got.n != n {
		t.Errorf("OnUnsolicited(%q, %d), want (%q, %d)", got.addr, got.n, producer, n)
	}
	select {
	case more := <-reports:
		t.Errorf("reported again: %+v", more)
	default:
	}
	warned := logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warned) != 1 {
		t.Fatalf("%d warnings, want 1: %+v", len(warned), warned)
	}
	fields := warned[0].ContextMap()
	if fields["producer"] != producer || fields["bytes"] != int64(n) {
		t.Errorf("warning %q %v, want producer %q and bytes %d", warned[0].Message, fields, producer, n)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "STALE") || strings.Contains(strings.ToUpper(fieldsText(e.ContextMap())), "STALE") {
			t.Errorf("the log repeats the producer's bytes: %q %v", e.Message, e.ContextMap())
		}
	}
}

func fieldsText(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// A producer's unsolicited response (run STALE) after a complete response to
// run A, arriving while the connection sits idle, with A's end, or split
// between the two, reaches neither of the runs B and C sent after it from
// consumers of their own: each gets its own response. The connection is
// discarded, and that is logged and reported once with the byte count.
func TestUnsolicitedResponseReachesNoOtherRun(t *testing.T) {
	for _, framing := range []string{"content-length", "chunked"} {
		for _, when := range []string{"late", "same read", "split"} {
			t.Run(framing+", "+when, func(t *testing.T) {
				stale := responseOf(framing, "text/event-stream", runEvents("STALE"))
				read, written := make(chan struct{}), make(chan *net.TCPConn, 1)
				upstream := unsolicitedProducer(t, framing, when, stale, read, written)
				addr, reports, logs := unsolicitedRelay(t, upstream)

				if got := runOn(t, addr, "A"); !strings.HasPrefix(got, runEvents("A")) || strings.Contains(got, "STALE") {
					t.Fatalf("run A read %q", got)
				}
				close(read)
				pc := testkit.Await(t, written, "the unsolicited bytes were not written")
				if when == "late" {
					// Otherwise the relay, having read some with A's end,
					// closed the connection: nothing to wait for.
					awaitDelivered(t, pc)
				}
				for _, run := range []string{"B", "C"} {
					if got := runOn(t, addr, run); got != runEvents(run) {
						t.Fatalf("run %s read\n%q\nwant its own events", run, got)
					}
				}
				n := len(stale)
				if when == "split" {
					n = len(stale) / 2 // the rest came after the connection was closed
				}
				checkUnsolicitedReported(t, upstream, reports, logs, n)
			})
		}
	}
}

// A proxied GET's or HEAD's connection poisoned the same way (an
// unsolicited response while it sits idle, or with the response's end) serves
// no later request: the next GET and the next run, from consumers of their
// own, get their own responses. (A HEAD's connection is closed after its
// response, TestNoBodyResponseConnectionIsNeverReused: bytes that come
// late are read by no one.)
func TestUnsolicitedResponseReachesNoOtherProxiedRequest(t *testing.T) {
	for _, method := range []string{"GET", "HEAD"} {
		for _, when := range []string{"late", "same read"} {
			if method == "HEAD" && when == "late" {
				continue
			}
			t.Run(method+", "+when, func(t *testing.T) {
				stale := responseOf("content-length", "text/plain", "STALE")
				read, written := make(chan struct{}), make(chan *net.TCPConn, 1)
				upstream := unsolicitedProducer(t, "content-length", when, stale, read, written)
				addr, reports, logs := unsolicitedRelay(t, upstream)

				resp, got := requestOn(t, addr, method, "/one")
				if want := map[string]string{"GET": "/one", "HEAD": ""}[method]; got != want || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s /one: %d %q, want 200 %q", method, resp.StatusCode, got, want)
				}
				close(read)
				pc := testkit.Await(t, written, "the unsolicited bytes were not written")
				if when == "late" {
					awaitDelivered(t, pc)
				}
				if _, got := requestOn(t, addr, "GET", "/two"); got != "/two" {
					t.Fatalf("GET /two read %q, want its own response", got)
				}
				if got := runOn(t, addr, "B"); got != runEvents("B") {
					t.Fatalf("run B read\n%q\nwant its own events", got)
				}
				checkUnsolicitedReported(t, upstream, reports, logs, len(stale))
			})
		}
	}
}

// A pooled connection the producer closed while it sat idle is discarded
// before it is reused, without a warning (a producer's keep-alive ending is no
// fault): the next run goes out on a new connection and is answered.
func TestClosedIdleProducerConnectionIsNotReused(t *testing.T) {
	read, written := make(chan struct{}), make(chan *net.TCPConn, 1)
	upstream := unsolicitedProducer(t, "content-length", "close", "", read, written)
	addr, reports, logs := unsolicitedRelay(t, upstream)

	if got := runOn(t, addr, "A"); got != runEvents("A") {
		t.Fatalf("run A read %q", got)
	}
	close(read)
	awaitDelivered(t, testkit.Await(t, written, "the producer did not close"))
	if got := runOn(t, addr, "B"); got != runEvents("B") {
		t.Fatalf("run B read\n%q\nwant its own events", got)
	}
	select {
	case got := <-reports:
		t.Errorf("a close reported as unsolicited bytes: %+v", got)
	default:
	}
	if w := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(w) != 0 {
		t.Errorf("warnings: %+v", w)
	}
}

// A request that goes through fasthttp's own transport (a response asked
// not to be streamed: its body skipped here) is kept off a poisoned pooled
// connection too: its first write finds the unsolicited bytes, and the client
// sends it again on a new connection.
func TestUnsolicitedBytesStopFasthttpsOwnTransport(t *testing.T) {
	stale := responseOf("content-length", "text/plain", "STALE")
	read, written := make(chan struct{}), make(chan *net.TCPConn, 1)
	upstream := unsolicitedProducer(t, "content-length", "late", stale, read, written)
	reports := make(chan unsolicitedReport, 2)
	client := NewClient(ClientOptions{MaxIdleConnDuration: time.Minute, OnUnsolicited: func(addr string, n int) { reports <- unsolicitedReport{addr, n} }})

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(upstream + "/one")
	if err := client.Do(req, resp); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.BodyStream()); string(b) != "/one" || err != nil {
		t.Fatalf("GET /one: %q, %v", b, err)
	}
	resp.CloseBodyStream() //nolint:errcheck // the connection back to the pool
	close(read)
	awaitDelivered(t, testkit.Await(t, written, "the unsolicited bytes were not written"))

	req.SetRequestURI(upstream + "/two")
	resp.Reset()
	resp.SkipBody = true
	if err := client.Do(req, resp); err != nil {
		t.Fatal(err)
	}
	if n := resp.Header.ContentLength(); n != len("/two") {
		t.Errorf("GET /two answered with a Content-Length of %d, want its own %d", n, len("/two"))
	}
	if got := testkit.Await(t, reports, "the unsolicited bytes were not reported"); got.n != len(stale) {
		t.Errorf("reported %d bytes, want %d", got.n, len(stale))
	}
}
