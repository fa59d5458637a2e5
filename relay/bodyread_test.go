package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// echoRunProducer answers every run with RUN_STARTED and RUN_FINISHED of
// the input's runId, so that a consumer can tell its own response. It
// looks for the runId in the body's first KiB, where the tests put it,
// and reads the rest into nothing.
func echoRunProducer(w http.ResponseWriter, r *http.Request) {
	var start [1 << 10]byte
	n, _ := io.ReadFull(r.Body, start[:])
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	id := gjson.GetBytes(start[:n], "runId").Str
	testkit.StreamHeaders(w)
	fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":%q}\n\n", id)
	fmt.Fprintf(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":%q}\n\n", id)
}

// paddedRun returns a RunAgentInput of runId id and about n bytes.
func paddedRun(id string, n int) string {
	head := `{"threadId":"t","runId":"` + id + `","protocolVersion":"1.0","messages":[],"forwardedProps":{"pad":"`
	return head + strings.Repeat("x", max(0, n-len(head)-3)) + `"}}`
}

// holdHeaders opens one connection per header, each sending its header and
// what follows it, then nothing more, and waits until the relay reads the
// body of each (it holds some of the budget for it).
func holdHeaders(t *testing.T, addr string, bodies *bodyBudget, headers ...string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, len(headers))
	for i, header := range headers {
		before := bodies.inFlight()
		c := testkit.DialConsumer(t, addr)
		io.WriteString(c, header) //nolint:errcheck
		testkit.WaitFor(t, "attacker "+strconv.Itoa(i)+"'s body read", func() bool { return bodies.inFlight() > before })
		conns = append(conns, c)
	}
	return conns
}

// Four connections that send a header and hold it, a chunked body or a
// Content-Length of 64 MiB with one byte sent, hold what came of their
// bodies, not what their headers announce: at the default limits, small
// runs of other consumers are served meanwhile (issue #39).
func TestHeldHeadersDoNotDenyRuns(t *testing.T) {
	h := newHarness(t, echoRunProducer, func(r *Relay) { r.Tap = nil })
	addr := strings.TrimPrefix(h.url, "http://")
	chunked := runHeader("Transfer-Encoding: chunked\r\n") + "400\r\n{"
	long := runHeader("Content-Length: 67108864\r\n") + "{"
	attackers := holdHeaders(t, addr, h.relay.bodies, chunked, chunked, long, long)

	for i := range 8 {
		id := "small-" + strconv.Itoa(i)
		got := rawExchange(t, addr, runHeader("Content-Length: "+strconv.Itoa(len(paddedRun(id, 2000)))+"\r\nConnection: close\r\n")+paddedRun(id, 2000))
		if statusOf(got) != 200 || !strings.Contains(got, `"runId":"`+id+`"`) {
			t.Fatalf("run %d beside four held headers: %.300q", i, got)
		}
	}
	if held := h.relay.bodies.inFlight(); held > 4*(64<<10) {
		t.Errorf("four held headers hold %d bytes of the budget", held)
	}
	for _, c := range attackers {
		c.Close()
	}
	testkit.WaitFor(t, "the held bodies given back", func() bool { return h.relay.bodies.inFlight() == 0 })
}

// A hundred consumers uploading 1 MB chunked bodies at once, at the
// default limits (--max-body 64 MiB, --max-bodies-in-flight 256 MiB), are
// all served, each its own run's events (issue #39: 96 of them got 503
// when a chunked header claimed a whole --max-body).
func TestConcurrentChunkedUploadsAllComplete(t *testing.T) {
	h := newHarness(t, echoRunProducer, func(r *Relay) { r.Tap = nil })
	addr := strings.TrimPrefix(h.url, "http://")
	const n = 100
	pad := bytes.Repeat([]byte("x"), 64<<10) // 16 of them and the run around: 1 MiB and a little
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "upload-" + strconv.Itoa(i)
			status, b, err := upload(addr, id, pad, 16)
			if err != nil || status != 200 || !strings.Contains(b, `"runId":"`+id+`"`) || strings.Count(b, `"runId"`) != 2 {
				errs <- fmt.Sprintf("%s: %d %v %.200q", id, status, err, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for e := range errs {
		if failed++; failed <= 5 {
			t.Error(e)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d uploads not served", failed, n)
	}
	testkit.WaitFor(t, "the bodies given back", func() bool { return h.relay.bodies.inFlight() == 0 })
}

// A body that stops arriving is cut at the body timeout: 408 with a
// problem naming --body-timeout, the connection closed, reported as a run
// refused, and what it held of the budget given back; whether it is
// chunked or of known length, and whether none of it or some came. A body
// whose bytes keep coming, each before the timeout, is read however long
// it takes.
func TestStalledBodyIsCutAtTheBodyTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	h := newHarness(t, echoRunProducer, func(r *Relay) { r.BodyTimeout = limit })
	addr := strings.TrimPrefix(h.url, "http://")
	for _, tc := range []struct {
		name, request, detail string
		reported              bool
	}{
		{"chunked, a chunk then nothing", runHeader("Transfer-Encoding: chunked\r\n") + chunk(`{"threadId":"t",`), "(--body-timeout)", true},
		{"Content-Length, a part then nothing", runHeader("Content-Length: 5000\r\n") + `{"threadId":"t",`, "(--body-timeout)", true},
		// The server waits for the body's first byte itself (fasthttp reads
		// one before the handler runs), under the same limit; a request it
		// fails to read is forgotten, and not reported.
		{"Content-Length, nothing of it", runHeader("Content-Length: 5000\r\n"), "", false},
	} {
		c := testkit.DialConsumer(t, addr)
		io.WriteString(c, tc.request) //nolint:errcheck
		br := bufio.NewReader(c)
		resp, body := readOne(t, c, br)
		var p Problem
		json.Unmarshal([]byte(body), &p) //nolint:errcheck
		if resp.StatusCode != 408 || resp.Header.Get("Content-Type") != "application/problem+json" ||
			p.Type != "urn:agui-relay:request-timeout" || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: %d %s %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if b, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the connection stayed open (%q, %v)", tc.name, b, err)
		}
		if !tc.reported {
			continue
		}
		if rep := h.report(); rep.Status != 408 || rep.Problem != "urn:agui-relay:request-timeout" {
			t.Errorf("%s: report %+v", tc.name, rep)
		}
	}
	if n := h.relay.bodies.inFlight(); n != 0 {
		t.Errorf("%d bytes held after the cuts", n)
	}

	// A byte every sixth of the limit, for four times the limit: served.
	body := paddedRun("slow", 200)
	c := testkit.DialConsumer(t, addr)
	io.WriteString(c, runHeader("Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n")) //nolint:errcheck
	pace := time.NewTicker(limit / 6)
	defer pace.Stop()
	sent, start := 0, time.Now()
	for ; time.Since(start) < 4*limit; <-pace.C {
		io.WriteString(c, body[sent:sent+1]) //nolint:errcheck
		sent++
	}
	io.WriteString(c, body[sent:]) //nolint:errcheck
	if resp, b := readOne(t, c, bufio.NewReader(c)); resp.StatusCode != 200 || !strings.Contains(b, `"runId":"slow"`) {
		t.Errorf("a body trickled for %v, a byte each %v: %d %.200q", time.Since(start), limit/6, resp.StatusCode, b)
	}
	h.report()
}

// Behind a Router, a body is cut at the timeout of the route its path is
// for (timeouts.body), and served on a route whose timeout it keeps.
func TestRouterCutsAStalledBodyAtItsRoutesTimeout(t *testing.T) {
	const short = 200 * time.Millisecond
	h, _ := recordingProducer(t, nil)
	tab, err := NewTable([]Route{
		{Name: "short", Prefix: "/short", Relay: &Relay{Upstream: h.producer.URL, BodyTimeout: short}},
		{Name: "rest", Prefix: "/", Relay: &Relay{Upstream: h.producer.URL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRouter(tab, 0, nil)
	addr := serveRaw(t, rt.Server())
	t.Cleanup(rt.EndRuns)

	c := testkit.DialConsumer(t, addr)
	io.WriteString(c, "POST /short/run HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{") //nolint:errcheck
	resp, body := readOne(t, c, bufio.NewReader(c))
	if resp.StatusCode != 408 || !strings.Contains(body, "came for "+short.String()+" (--body-timeout)") {
		t.Errorf("a stalled body on the route of %v: %d %s", short, resp.StatusCode, body)
	}
	// The other route's default (a minute): its body, sent after the
	// first route's body was cut, is served.
	c = testkit.DialConsumer(t, addr)
	input := paddedRun("rest", 300)
	io.WriteString(c, "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(input))+"\r\n\r\n{") //nolint:errcheck
	go func() {
		time.Sleep(2 * short)        // longer than the other route's timeout, a pace of the client's
		io.WriteString(c, input[1:]) //nolint:errcheck
	}()
	if resp, body := readOne(t, c, bufio.NewReader(c)); resp.StatusCode != 200 {
		t.Errorf("a body paused for %v on a route of the default timeout: %d %s", 2*short, resp.StatusCode, body)
	}
	testkit.WaitFor(t, "the bodies given back", func() bool { return rt.bodies.inFlight() == 0 })
}

// A request pipelined behind a run whose stream is handed over in place,
// its header sent with the run and its body not yet: the server, which
// reads the body's first byte itself, finds the connection taken, and the
// request is lost. The connection is then not kept alive: the run's response says
// Connection: close, and nothing more is read as a request (the late body
// would be read as one).
func TestRequestPipelinedWithItsBodyLateClosesTheConnection(t *testing.T) {
	var asked atomic.Int32
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		echoRunProducer(w, r)
	}, nil)
	c := testkit.DialConsumer(t, strings.TrimPrefix(h.url, "http://"))
	br := bufio.NewReader(c)
	// A first run, so that the next one's stream is handed over in place.
	first := paddedRun("first", 200)
	io.WriteString(c, runHeader("Content-Length: "+strconv.Itoa(len(first))+"\r\n")+first) //nolint:errcheck
	if resp, b := readOne(t, c, br); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("the first run: %d close=%v %.200q", resp.StatusCode, resp.Close, b)
	}
	h.report()
	second, late := paddedRun("second", 200), paddedRun("late", 200)
	io.WriteString(c, runHeader("Content-Length: "+strconv.Itoa(len(second))+"\r\n")+second+ //nolint:errcheck
		runHeader("Content-Length: "+strconv.Itoa(len(late))+"\r\n"))
	resp, b := readOne(t, c, br)
	if resp.StatusCode != 200 || !strings.Contains(b, `"runId":"second"`) || !resp.Close {
		t.Errorf("the run before the pipelined request: %d close=%v %.200q", resp.StatusCode, resp.Close, b)
	}
	h.report()
	io.WriteString(c, late) //nolint:errcheck
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Errorf("after the run's response: %.200q %v, want the connection closed", rest, err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the producer was asked %d times, want the two runs", n)
	}
}
