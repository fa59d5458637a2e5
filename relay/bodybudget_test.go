package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// runOfLen returns a RunAgentInput of exactly n bytes.
func runOfLen(t *testing.T, n int) string {
	t.Helper()
	head := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[],"forwardedProps":{"pad":"`
	tail := `"}}`
	if n < len(head)+len(tail) {
		t.Fatalf("no input of %d bytes", n)
	}
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// runHeader is the header of a run's request whose body is framed by framing
// (a Content-Length or Transfer-Encoding line and any other).
func runHeader(framing string) string {
	return "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n" + framing + "\r\n"
}

// readOne reads one response from c, its body whole.
func readOne(t *testing.T, c net.Conn, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp, string(b)
}

// wantBudgetRefusal reads c's response: a 503 of the bodies' budget with
// Retry-After, and the connection closed after it.
func wantBudgetRefusal(t *testing.T, c net.Conn, what string) {
	t.Helper()
	br := bufio.NewReader(c)
	resp, body := readOne(t, c, br)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"type":"`+ProblemBodiesInFlight+`"`) {
		t.Errorf("%s: %d Retry-After %q %s, want 503 %s with Retry-After: 1", what, resp.StatusCode, resp.Header.Get("Retry-After"), body, ProblemBodiesInFlight)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Errorf("%s: the connection stayed open (%q, %v)", what, n, err)
	}
}

// Request bodies held at once are bounded, all connections together (issue
// #31): past MaxBodiesInFlight a body is refused with 503 and Retry-After
// before it is read (from its Content-Length; a chunked one as it outgrows
// what was free), and what a body held comes back once it was served.
func TestBodiesInFlightAreBounded(t *testing.T) {
	h, seen := recordingProducer(t, func(r *Relay) {
		r.MaxBody = 8 << 10
		r.MaxBodiesInFlight = 12 << 10
	})
	addr := strings.TrimPrefix(h.url, "http://")
	held := func() int { return h.relay.bodies.inFlight() }

	// A holds 8000 bytes: its header came, its body is on the way.
	a := testkit.DialConsumer(t, addr)
	bodyA := runOfLen(t, 8000)
	io.WriteString(a, runHeader("Content-Length: 8000\r\n")+bodyA[:100])
	testkit.WaitFor(t, "the first body claimed", func() bool { return held() == 8000 })

	// Over the budget: refused from the header alone, whatever the framing.
	b := testkit.DialConsumer(t, addr)
	io.WriteString(b, runHeader("Content-Length: 5000\r\n"))
	wantBudgetRefusal(t, b, "Content-Length 5000")
	e := testkit.DialConsumer(t, addr)
	io.WriteString(e, runHeader("Content-Length: 5000\r\nExpect: 100-continue\r\n"))
	wantBudgetRefusal(t, e, "Expect: 100-continue") // and no 100 Continue before it
	c := testkit.DialConsumer(t, addr)
	io.WriteString(c, runHeader("Transfer-Encoding: chunked\r\n")+strconv.FormatInt(5000, 16)+"\r\n")
	wantBudgetRefusal(t, c, "a chunk of 5000 with 4 KiB free")

	// Within what is free: served, and given back.
	small := runOfLen(t, 3000)
	d := testkit.DialConsumer(t, addr)
	io.WriteString(d, runHeader("Content-Length: 3000\r\nConnection: close\r\n")+small)
	if resp, _ := readOne(t, d, bufio.NewReader(d)); resp.StatusCode != 200 {
		t.Errorf("a body that fits: %d", resp.StatusCode)
	}
	if n := held(); n != 8000 {
		t.Errorf("%d bytes held after the small body was served, want the first body's 8000", n)
	}

	// A's body completes: served, and the budget is whole again.
	io.WriteString(a, bodyA[100:])
	if resp, _ := readOne(t, a, bufio.NewReader(a)); resp.StatusCode != 200 {
		t.Errorf("the first body: %d", resp.StatusCode)
	}
	if n := held(); n != 0 {
		t.Errorf("%d bytes held once every body was served", n)
	}
	for name, req := range map[string]string{
		"Content-Length 8000": runHeader("Content-Length: 8000\r\nConnection: close\r\n") + bodyA,
		"chunked 8000":        runHeader("Transfer-Encoding: chunked\r\nConnection: close\r\n") + chunk(bodyA[:5000]) + chunk(bodyA[5000:]) + "0\r\n\r\n",
	} {
		if got := rawExchange(t, addr, req); statusOf(got) != 200 {
			t.Errorf("%s, the budget free: %.200q", name, got)
		}
	}
	if n := held(); n != 0 {
		t.Errorf("%d bytes held at the end", n)
	}
	if n := len(seen()); n != 4 {
		t.Errorf("the producer saw %d runs, want the 4 served", n)
	}
}

// A Router's server has one budget for every route's bodies.
func TestRouterBoundsBodiesInFlight(t *testing.T) {
	h, _ := recordingProducer(t, nil)
	tab, err := NewTable([]Route{
		{Name: "a", Prefix: "/a", Relay: &Relay{Upstream: h.producer.URL, MaxBody: 8 << 10}},
		{Name: "b", Prefix: "/agent", Relay: &Relay{Upstream: h.producer.URL, MaxBody: 8 << 10}},
		{Name: "small", Prefix: "/small", Relay: &Relay{Upstream: h.producer.URL, MaxBody: 1 << 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRouter(tab, 0, nil)
	rt.MaxBodiesInFlight = 12 << 10
	addr := testkit.Serve(t, rt.Server(), Listener)
	t.Cleanup(rt.EndRuns)

	a := testkit.DialConsumer(t, addr)
	io.WriteString(a, "POST /a/x HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 8000\r\n\r\n{")
	testkit.WaitFor(t, "the first body claimed", func() bool { return rt.bodies.inFlight() == 8000 })
	b := testkit.DialConsumer(t, addr)
	io.WriteString(b, runHeader("Content-Length: 5000\r\n"))
	wantBudgetRefusal(t, b, "another route's body over the budget")
	a.Close()
	testkit.WaitFor(t, "the budget given back by a body never finished", func() bool { return rt.bodies.inFlight() == 0 })
	if got := rawExchange(t, addr, runHeader("Content-Length: 8000\r\nConnection: close\r\n")+runOfLen(t, 8000)); statusOf(got) != 200 {
		t.Errorf("the budget free: %.200q", got)
	}
	// A body over its route's limit, refused before 100 Continue: never
	// read, and its claim given back.
	got := rawExchange(t, addr, "POST /small HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 4000\r\nExpect: 100-continue\r\n\r\n")
	if statusOf(got) != 413 {
		t.Errorf("over the route's limit: %.200q", got)
	}
	if n := rt.bodies.inFlight(); n != 0 {
		t.Errorf("%d bytes held after a body refused before 100 Continue", n)
	}
}

// A run refused before its input was read (the bodies' budget, a body
// over MaxBody announced with Expect: 100-continue) is reported as any
// refused run is: to the tap, with its status and problem, and in the log.
// A request that is no run by its header (a GET) is refused without a report.
func TestUnreadRefusalsAreReportedAsRuns(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted, testkit.RunFinished)
	}, func(r *Relay) {
		r.MaxBody = 8 << 10
		r.MaxBodiesInFlight = 12 << 10
	})
	addr := strings.TrimPrefix(h.url, "http://")
	a := testkit.DialConsumer(t, addr)
	bodyA := runOfLen(t, 8000)
	io.WriteString(a, runHeader("Content-Length: 8000\r\n")+bodyA[:100])
	testkit.WaitFor(t, "the first body claimed", func() bool { return h.relay.bodies.inFlight() == 8000 })

	b := testkit.DialConsumer(t, addr)
	io.WriteString(b, runHeader("Content-Length: 5000\r\n"))
	wantBudgetRefusal(t, b, "Content-Length 5000")
	if rep := h.report(); rep.Status != 503 || rep.Problem != ProblemBodiesInFlight || rep.Route != h.relay.Route {
		t.Errorf("the budget's refusal: report %+v", rep)
	}
	if n := h.logs.FilterMessage("run refused").FilterField(zap.String("problem", ProblemBodiesInFlight)).Len(); n != 1 {
		t.Errorf("%d log lines of the budget's refusal, want 1", n)
	}

	// A GET with headers over the server's buffer: refused, not a run.
	if got := rawExchange(t, addr, "GET /agent HTTP/1.1\r\nHost: r\r\nX-Big: "+strings.Repeat("x", 20<<10)+"\r\nConnection: close\r\n\r\n"); statusOf(got) != 431 {
		t.Errorf("headers too large: %.200q", got)
	}
	// A body over MaxBody that waits for 100 Continue: refused unread,
	// reported; the report that comes is this one, none of the GET's.
	e := testkit.DialConsumer(t, addr)
	io.WriteString(e, runHeader("Content-Length: 9000\r\nExpect: 100-continue\r\nConnection: close\r\n"))
	if resp, _ := readOne(t, e, bufio.NewReader(e)); resp.StatusCode != 413 {
		t.Errorf("a body over MaxBody: %d", resp.StatusCode)
	}
	if rep := h.report(); rep.Status != 413 || rep.Problem != problemTooLarge(8<<10).Type {
		t.Errorf("the refusal of a body over MaxBody: report %+v", rep)
	}

	io.WriteString(a, bodyA[100:])
	if resp, _ := readOne(t, a, bufio.NewReader(a)); resp.StatusCode != 200 {
		t.Errorf("the first body: %d", resp.StatusCode)
	}
	if rep := h.report(); rep.Status != 200 || rep.RunID != "r1" {
		t.Errorf("the first run: report %+v", rep)
	}
}
