package relay

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"go.uber.org/zap"
)

func testTable(t *testing.T, prefixes ...string) *Table {
	t.Helper()
	var rs []Route
	for _, p := range prefixes {
		rs = append(rs, Route{Name: "r" + strings.ReplaceAll(p, "/", "_"), Prefix: p, Relay: &Relay{Upstream: "http://127.0.0.1:1"}})
	}
	tab, err := NewTable(rs)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestTableMatchesTheLongestPrefixOnSegmentBoundaries(t *testing.T) {
	withRoot := testTable(t, "/agents/a", "/", "/agents/ab", "/agents/a/deep")
	without := testTable(t, "/agents/a", "/agents/ab")
	for _, c := range []struct {
		path          string
		root, without string // "" means no route
	}{
		{"/agents/a", "/agents/a", "/agents/a"},
		{"/agents/a/", "/agents/a", "/agents/a"},
		{"/agents/a/run", "/agents/a", "/agents/a"},
		{"/agents/ab", "/agents/ab", "/agents/ab"},
		{"/agents/ab/run", "/agents/ab", "/agents/ab"},
		{"/agents/abc", "/", ""},
		{"/agents/a/deep", "/agents/a/deep", "/agents/a"},
		{"/agents/a/deep/x", "/agents/a/deep", "/agents/a"},
		{"/agents/a/deeper", "/agents/a", "/agents/a"},
		{"/agents", "/", ""},
		{"/AGENTS/a", "/", ""},   // paths are case-sensitive
		{"/agents/%61", "/", ""}, // matched as sent, not decoded
		{"/", "/", ""},
		{"", "/", ""},
	} {
		for _, tc := range []struct {
			tab  *Table
			want string
		}{{withRoot, c.root}, {without, c.without}} {
			got := ""
			if r := tc.tab.Match([]byte(c.path)); r != nil {
				got = r.Prefix
			}
			if got != tc.want {
				t.Errorf("%q in %d routes: matched %q, want %q", c.path, len(tc.tab.Routes()), got, tc.want)
			}
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, good := range []string{"/", "/a", "/agents/a", "/v1/agents/a-b_c.d~"} {
		if err := CheckPrefix(good); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for bad, why := range map[string]string{
		"":            "absolute path",
		"agents/a":    "absolute path",
		"/agents/a/":  "trailing slash",
		"/agents//a":  "empty",
		"/agents/../": "trailing slash",
		"/agents/..":  ". or ..",
		"/./a":        ". or ..",
		"/a?x=1":      "query",
		"/a#f":        "fragment",
		"/a%20b":      "percent",
		"/a b":        "spaces",
	} {
		err := CheckPrefix(bad)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error saying %q", bad, err, why)
		}
	}
}

func TestNewTableRefusesWhatIsAmbiguous(t *testing.T) {
	r := &Relay{Upstream: "http://127.0.0.1:1"}
	for _, c := range []struct {
		routes []Route
		want   string
	}{
		{nil, "no routes"},
		{[]Route{{Name: "a", Prefix: "/a", Relay: r}, {Name: "a", Prefix: "/b", Relay: r}}, `route "a": the name is used twice`},
		{[]Route{{Name: "a", Prefix: "/a", Relay: r}, {Name: "b", Prefix: "/a", Relay: r}}, `route "b": prefix "/a" is route "a"'s already`},
		{[]Route{{Name: "a", Prefix: "a", Relay: r}}, `route "a": prefix`},
		{[]Route{{Prefix: "/a", Relay: r}}, "no name"},
		{[]Route{{Name: "a", Prefix: "/a"}}, `route "a": no relay`},
	} {
		if _, err := NewTable(c.routes); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.routes, err, c.want)
		}
	}
}

// echoProducer answers any request with its name, the request's target and
// X-Forwarded-Prefix; a run gets the same as a one-run event stream.
func echoProducer(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := fmt.Sprintf("%s %s prefix=%q", name, r.URL.RequestURI(), r.Header.Get("X-Forwarded-Prefix"))
		if r.Method != http.MethodPost {
			fmt.Fprint(w, echo)
			return
		}
		testkit.StreamHeaders(w)
		testkit.SSE(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
			fmt.Sprintf("data: {\"type\":\"CUSTOM\",\"name\":\"echo\",\"value\":%q}\n\n", echo),
			"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
	}))
}

// A request's route is matched once in the handler, for its body's timeout
// and for the relay that serves it. A body's first read, which the server
// makes before the handler, matches it once more (Router.bodyTimeout).
func TestRouterMatchesARouteOncePerRequest(t *testing.T) {
	p := echoProducer("A")
	defer p.Close()
	tab, err := NewTable([]Route{{Name: "a", Prefix: "/agents/a", Relay: &Relay{Upstream: p.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	var matches atomic.Int32
	countingMatches(tab, &matches)
	url := serveRouter(t, NewRouter(tab, 0, nil))

	if status, body := get(t, url+"/agents/a/x"); status != 200 || !strings.HasPrefix(body, "A /agents/a/x") {
		t.Fatalf("GET: %d %q", status, body)
	}
	if n := matches.Swap(0); n != 1 {
		t.Errorf("a GET matched its route %d times, want 1", n)
	}
	resp, err := http.Post(url+"/agents/a/run", "application/json", strings.NewReader(`{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if stream := testkit.ReadAll(t, resp); !strings.Contains(stream, "RUN_FINISHED") {
		t.Fatalf("run: %s", stream)
	}
	if n := matches.Load(); n != 2 {
		t.Errorf("a run with its body matched its route %d times, want 2 (the body's first read, the handler)", n)
	}
}

// serveRouter serves rt on a free port until the test ends.
func serveRouter(t *testing.T, rt *Router) string {
	t.Helper()
	addr := testkit.Serve(t, rt.Server(), nil)
	t.Cleanup(rt.EndRuns)
	return "http://" + addr
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, testkit.ReadAll(t, resp)
}

func TestRouterSendsEachPathToItsRoute(t *testing.T) {
	a, b := echoProducer("A"), echoProducer("B")
	defer a.Close()
	defer b.Close()
	reports := make(chan *RunReport, 4)
	onRun := func(rep *RunReport) { c := *rep; reports <- &c }
	tab, err := NewTable([]Route{
		{Name: "a", Prefix: "/agents/a", Relay: &Relay{Upstream: a.URL + "/api", StripPrefix: "/agents/a", Route: "a", Tap: onEnd(nil, onRun)}},
		{Name: "b", Prefix: "/agents/b", Relay: &Relay{Upstream: b.URL, Route: "b", Tap: onEnd(nil, onRun)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	url := serveRouter(t, NewRouter(tab, 0, nil))

	for path, want := range map[string]string{
		"/agents/a":           `A /api prefix="/agents/a"`,
		"/agents/a?x=1":       `A /api?x=1 prefix="/agents/a"`,
		"/agents/a/run?x=1":   `A /api/run?x=1 prefix="/agents/a"`,
		"/agents/b/run":       `B /agents/b/run prefix=""`,
		"/agents/b/x/y?q=%20": `B /agents/b/x/y?q=%20 prefix=""`,
	} {
		if status, body := get(t, url+path); status != 200 || body != want {
			t.Errorf("GET %s: %d %q, want %q", path, status, body, want)
		}
	}
	// A dot segment is refused before matching (dotsegments_test.go).
	if status, _ := get(t, url+"/agents/a/b/../c"); status != 400 {
		t.Errorf("GET /agents/a/b/../c: %d, want 400", status)
	}
	for _, path := range []string{"/", "/agents/ab", "/agents", "/other/agents/a"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		p := problemOf(t, resp)
		if resp.StatusCode != 404 || p.Type != "urn:agui-relay:no-route" || !strings.Contains(p.Detail, path) {
			t.Errorf("GET %s: %d %+v, want a 404 no-route problem", path, resp.StatusCode, p)
		}
	}

	resp, err := http.Post(url+"/agents/b/run", "application/json", strings.NewReader(`{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if stream := testkit.ReadAll(t, resp); !strings.Contains(stream, `B /agents/b/run`) || !strings.Contains(stream, "RUN_FINISHED") {
		t.Errorf("run on route b: %s", stream)
	}
	select {
	case rep := <-reports:
		if rep.Route != "b" || rep.Terminal != "RUN_FINISHED" {
			t.Errorf("report %+v, want route b", rep)
		}
	case <-time.After(testkit.Liveness):
		t.Fatal("no report")
	}
}

// heldProducer streams RUN_STARTED at once and RUN_FINISHED when release
// closes; GET answers its name.
func heldProducer(name string, release <-chan struct{}) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fmt.Fprint(w, name)
			return
		}
		testkit.StreamHeaders(w)
		testkit.SSE(w, fmt.Sprintf("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":%q}\n\n", name))
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		testkit.SSE(w, fmt.Sprintf("data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":%q}\n\n", name))
	}))
}

func oneRoute(t *testing.T, upstream string, maxBody int) *Table {
	t.Helper()
	tab, err := NewTable([]Route{{Name: "only", Prefix: "/", Relay: &Relay{Upstream: upstream, MaxBody: maxBody, Client: NewClient(ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond})}}})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// openRun starts a run and reads its stream up to the first event.
func openRun(t *testing.T, url string) (*http.Response, *strings.Builder) {
	t.Helper()
	resp, err := http.Post(url+"/run", "application/json", strings.NewReader(`{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), "RUN_STARTED") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before RUN_STARTED: %v, %q", err, got.String())
		}
	}
	return resp, &got
}

func TestSwapKeepsRunsInFlightOnTheirTable(t *testing.T) {
	release := make(chan struct{})
	old, nu := heldProducer("old", release), heldProducer("new", release)
	defer old.Close()
	defer nu.Close()
	rt := NewRouter(oneRoute(t, old.URL, 0), 0, zap.NewNop())
	url := serveRouter(t, rt)

	resp, got := openRun(t, url)
	if err := rt.Swap(oneRoute(t, nu.URL, 0)); err != nil {
		t.Fatal(err)
	}
	if status, body := get(t, url+"/capabilities"); status != 200 || body != "new" {
		t.Errorf("after the swap a new request went to %q (%d), want the new upstream", body, status)
	}
	if rt.Active() != 1 || rt.Retired() != 1 {
		t.Errorf("active %d, retired %d: the old table's run is not counted", rt.Active(), rt.Retired())
	}
	close(release)
	got.WriteString(testkit.ReadAll(t, resp))
	if !strings.Contains(got.String(), `"runId":"old"`) || !strings.Contains(got.String(), `"type":"RUN_FINISHED","threadId":"t","runId":"old"`) {
		t.Errorf("the run in flight did not finish on the old upstream: %s", got)
	}
	testkit.WaitFor(t, "the retired table is let go once its run ended", func() bool { return rt.Retired() == 0 && rt.Active() == 0 })
}

// A request whose body is still arriving when the table is swapped is
// served by the new table: its route was matched before the body was read
// (for the body's timeout), and is matched again in the table in force.
func TestSwapDuringABodyServesItOnTheNewTable(t *testing.T) {
	old, nu := echoProducer("old"), echoProducer("new")
	defer old.Close()
	defer nu.Close()
	rt := NewRouter(oneRoute(t, old.URL, 0), 0, nil)
	addr := serveRaw(t, rt.Server())
	t.Cleanup(rt.EndRuns)

	c := testkit.DialConsumer(t, addr)
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nConnection: close\r\n\r\nhello") //nolint:errcheck
	testkit.WaitFor(t, "the body being read", func() bool { return rt.bodies.inFlight() > 0 })
	if err := rt.Swap(oneRoute(t, nu.URL, 0)); err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "world") //nolint:errcheck
	if resp, body := readOne(t, c, bufio.NewReader(c)); resp.StatusCode != 200 || !strings.Contains(body, "new /echo") {
		t.Errorf("a body finished after the swap: %d %q, want the new table's upstream", resp.StatusCode, body)
	}
}

func TestEndRunsReachesRetiredTables(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	old, nu := heldProducer("old", release), heldProducer("new", release)
	defer old.Close()
	defer nu.Close()
	rt := NewRouter(oneRoute(t, old.URL, 0), 0, nil)
	url := serveRouter(t, rt)
	resp, got := openRun(t, url)
	if err := rt.Swap(oneRoute(t, nu.URL, 0)); err != nil {
		t.Fatal(err)
	}
	rt.EndRuns()
	got.WriteString(testkit.ReadAll(t, resp))
	if rerr := runErrorOf(t, got.String()); rerr["code"] != CodeShutdown {
		t.Errorf("run on the retired table: %s", got)
	}
}

func TestSwapRefusesABodyLimitAboveTheServers(t *testing.T) {
	rt := NewRouter(oneRoute(t, "http://127.0.0.1:1", 1<<20), 2<<20, nil)
	if rt.MaxBody() != 2<<20 {
		t.Errorf("max body %d", rt.MaxBody())
	}
	before := rt.Table()
	err := rt.Swap(oneRoute(t, "http://127.0.0.1:2", 4<<20))
	if err == nil || !strings.Contains(err.Error(), `route "only": maxBody 4194304`) || !strings.Contains(err.Error(), "restart") {
		t.Errorf("swap: %v", err)
	}
	if rt.Table() != before {
		t.Error("a refused table was put in force")
	}
	if err := rt.Swap(oneRoute(t, "http://127.0.0.1:2", 2<<20)); err != nil {
		t.Errorf("swap within the limit: %v", err)
	}
}
