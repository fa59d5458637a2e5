package relay

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

const pageOrigin = "http://page.example:3000"

func mustCORS(t *testing.T, o CORSOptions) *CORS {
	t.Helper()
	c, err := NewCORS(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewCORSChecksTheOptions(t *testing.T) {
	bad := []struct {
		o    CORSOptions
		want string
	}{
		{CORSOptions{}, "none given"},
		{CORSOptions{AllowOrigins: []string{"app.example.com"}}, "not an origin"},
		{CORSOptions{AllowOrigins: []string{"https://app.example.com/"}}, "no path"},
		{CORSOptions{AllowOrigins: []string{"https://app.example.com/chat"}}, "no path"},
		{CORSOptions{AllowOrigins: []string{"https://app.example.com:99999"}}, "port"},
		{CORSOptions{AllowOrigins: []string{"null"}}, "sandboxed"},
		{CORSOptions{AllowOrigins: []string{"https://a*.example.com"}}, "first label"},
		{CORSOptions{AllowOrigins: []string{"*", "https://app.example.com"}}, "stands alone"},
		{CORSOptions{AllowOrigins: []string{"*"}, AllowCredentials: true}, "list the origins"},
		{CORSOptions{AllowOrigins: []string{pageOrigin}, AllowCredentials: true, ExposeHeaders: []string{"*"}}, "list the headers"},
		{CORSOptions{AllowOrigins: []string{pageOrigin}, AllowHeaders: []string{"X Bad"}}, "not a method or header name"},
		{CORSOptions{AllowOrigins: []string{pageOrigin}, AllowMethods: []string{"*", "GET"}}, "stands alone"},
		{CORSOptions{AllowOrigins: []string{pageOrigin}, MaxAge: -time.Second}, "zero or more"},
	}
	for _, b := range bad {
		if _, err := NewCORS(b.o); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("NewCORS(%+v): %v, want an error saying %q", b.o, err, b.want)
		}
	}
	c := mustCORS(t, CORSOptions{AllowOrigins: []string{"HTTPS://App.Example.com:443", "http://[::1]:8000", "https://*.example.org"}})
	for origin, want := range map[string]bool{
		"https://app.example.com":      true, // as a browser writes it: lower case, no default port
		"https://app.example.com:443":  false,
		"http://app.example.com":       false,
		"http://[::1]:8000":            true,
		"https://chat.example.org":     true,
		"https://a.b.example.org":      true,
		"https://example.org":          false,
		"https://evilexample.org":      false,
		"https://chat.example.org:444": false,
		"http://chat.example.org":      false,
		"":                             false,
	} {
		if got := c.allows([]byte(origin)); got != want {
			t.Errorf("allows(%q) = %v, want %v", origin, got, want)
		}
	}
}

// preflight sends a CORS preflight for a POST with a JSON body, as a
// browser does before HttpAgent's request.
func (h *harness) preflight(origin string, header ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest("OPTIONS", h.url+"/agent", nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.consumer.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	testkit.ReadAll(h.t, resp)
	return resp
}

// wantHeader checks that resp has exactly one line of header k, with value
// want; want "" means none at all.
func wantHeader(t *testing.T, resp *http.Response, k, want string) {
	t.Helper()
	got := resp.Header.Values(k)
	switch {
	case want == "" && len(got) != 0:
		t.Errorf("%s: %q, want none", k, got)
	case want != "" && (len(got) != 1 || got[0] != want):
		t.Errorf("%s: %q, want one line %q", k, got, want)
	}
}

// varyNames reports whether the response's Vary lines name every one of names.
func varyNames(resp *http.Response, names ...string) bool {
	var have []string
	for _, v := range resp.Header.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			have = append(have, strings.ToLower(strings.TrimSpace(f)))
		}
	}
	for _, n := range names {
		found := false
		for _, h := range have {
			found = found || h == strings.ToLower(n)
		}
		if !found {
			return false
		}
	}
	return true
}

func TestCORSPreflightIsAnsweredByTheRelay(t *testing.T) {
	var contacted atomic.Int32
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) { contacted.Add(1) }, func(r *Relay) {
		r.CORS = mustCORS(t, CORSOptions{AllowOrigins: []string{pageOrigin}, MaxAge: 10 * time.Minute})
	})
	resp := h.preflight(pageOrigin)
	if resp.StatusCode != 204 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
	wantHeader(t, resp, "Access-Control-Allow-Methods", "GET, HEAD, POST")
	wantHeader(t, resp, "Access-Control-Allow-Headers", "Accept, Authorization, Content-Type")
	wantHeader(t, resp, "Access-Control-Max-Age", "600")
	wantHeader(t, resp, "Access-Control-Allow-Credentials", "")
	if !varyNames(resp, "Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers") {
		t.Errorf("Vary %q", resp.Header.Values("Vary"))
	}

	// Another origin gets a response without the policy: its browser fails
	// the request.
	resp = h.preflight("http://other.example:3000")
	if resp.StatusCode != 204 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers"} {
		wantHeader(t, resp, k, "")
	}
	if !varyNames(resp, "Origin") {
		t.Errorf("Vary %q", resp.Header.Values("Vary"))
	}
	if n := contacted.Load(); n != 0 {
		t.Errorf("the producer got %d requests; a preflight is the relay's to answer", n)
	}

	// An OPTIONS that is no preflight is proxied, with the policy's headers.
	req, _ := http.NewRequest("OPTIONS", h.url+"/agent", nil)
	req.Header.Set("Origin", pageOrigin)
	resp, err := h.consumer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ReadAll(t, resp)
	wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
	if contacted.Load() != 1 {
		t.Errorf("a plain OPTIONS did not reach the producer")
	}
}

func TestCORSAnyHeaderAndMethodEchoTheRequest(t *testing.T) {
	h := newHarness(t, nil, func(r *Relay) {
		r.CORS = mustCORS(t, CORSOptions{AllowOrigins: []string{pageOrigin}, AllowHeaders: []string{"*"}, AllowMethods: []string{"*"}, AllowCredentials: true})
	})
	resp := h.preflight(pageOrigin, "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization,x-tenant")
	wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
	wantHeader(t, resp, "Access-Control-Allow-Credentials", "true")
	wantHeader(t, resp, "Access-Control-Allow-Methods", "PUT")
	wantHeader(t, resp, "Access-Control-Allow-Headers", "authorization,x-tenant")
	wantHeader(t, resp, "Access-Control-Max-Age", "")
}

func TestCORSAnyOrigin(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
			`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, func(r *Relay) {
		r.CORS = mustCORS(t, CORSOptions{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"*"}})
	})
	resp := h.preflight("https://anywhere.example")
	wantHeader(t, resp, "Access-Control-Allow-Origin", "*")
	resp = h.post("/agent", testkit.MinimalInput, "Origin", "https://anywhere.example")
	testkit.ReadAll(t, resp)
	wantHeader(t, resp, "Access-Control-Allow-Origin", "*")
	wantHeader(t, resp, "Access-Control-Expose-Headers", "*")
	// Without Origin (not a browser's cross-origin request): no policy.
	resp = h.post("/agent", testkit.MinimalInput)
	testkit.ReadAll(t, resp)
	wantHeader(t, resp, "Access-Control-Allow-Origin", "")
}

// The policy's headers are on every response of the relay: relayed streams
// (in place of the producer's own CORS headers), proxied responses, the
// producer's errors, and the relay's own problems.
func TestCORSHeadersOnEveryResponse(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	held := make(chan struct{}, 1)
	producer := func(w http.ResponseWriter, r *http.Request) {
		// The producer does CORS of its own, for another origin: the
		// relay's policy replaces it.
		w.Header().Set("Access-Control-Allow-Origin", "http://agent-own.example")
		w.Header().Set("Access-Control-Expose-Headers", "X-Agent")
		w.Header().Set("Vary", "Accept-Encoding")
		switch r.URL.Path {
		case "/agent":
			testkit.StreamHeaders(w)
			testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
				`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
		case "/capabilities":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		case "/broken":
			w.WriteHeader(500)
			w.Write([]byte("agent failed"))
		case "/hold":
			held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
	}
	policy := CORSOptions{AllowOrigins: []string{pageOrigin}, ExposeHeaders: []string{"X-Request-Id"}, AllowCredentials: true}
	h := newHarness(t, producer, func(r *Relay) {
		r.CORS = mustCORS(t, policy)
		r.MaxBody = 256
		r.Client = NewClient(ClientOptions{MaxConns: 1, MaxIdleConnDuration: 50 * time.Millisecond})
	})
	closed := testkit.ClosedURL(t)
	unreachable := newHarness(t, nil, func(r *Relay) { r.Upstream = closed; r.CORS = mustCORS(t, policy) })
	silent := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		select { // never answers until the test ends
		case <-hold:
		case <-r.Context().Done():
		}
	}, func(r *Relay) {
		r.CORS = mustCORS(t, policy)
		r.Client = NewClient(ClientOptions{FirstByteTimeout: 20 * time.Millisecond})
	})

	wantPolicy := func(name string, resp *http.Response, status int) {
		t.Helper()
		body := testkit.ReadAll(t, resp)
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d: %s", name, resp.StatusCode, status, body)
		}
		wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
		wantHeader(t, resp, "Access-Control-Allow-Credentials", "true")
		wantHeader(t, resp, "Access-Control-Expose-Headers", "X-Request-Id")
		if !varyNames(resp, "Origin") {
			t.Errorf("%s: Vary %q", name, resp.Header.Values("Vary"))
		}
	}
	origin := []string{"Origin", pageOrigin}

	resp := h.post("/agent", testkit.MinimalInput, origin...)
	wantPolicy("stream", resp, 200)
	if !varyNames(resp, "Accept-Encoding") {
		t.Errorf("stream: the producer's Vary is lost: %q", resp.Header.Values("Vary"))
	}
	h.report()

	req, _ := http.NewRequest("GET", h.url+"/capabilities", nil)
	req.Header.Set("Origin", pageOrigin)
	resp, err := h.consumer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantPolicy("proxied", resp, 200)

	resp = h.post("/broken", testkit.MinimalInput, origin...)
	wantPolicy("producer's 500", resp, 500)
	h.report()

	resp = h.post("/agent", `{"threadId":"t1","runId":"r1","messages":"none"}`, origin...)
	wantPolicy("400", resp, 400)
	h.report()

	resp = h.post("/agent", `{"pad":"`+strings.Repeat("x", 300)+`"}`, origin...)
	wantPolicy("413", resp, 413)

	resp = unreachable.post("/agent", testkit.MinimalInput, origin...)
	wantPolicy("502", resp, 502)

	resp = silent.post("/agent", testkit.MinimalInput, origin...)
	wantPolicy("504", resp, 504)

	// 503: the one connection to the producer is held by a run.
	go func() {
		resp := h.post("/hold", testkit.MinimalInput, origin...)
		resp.Body.Close()
	}()
	testkit.Await(t, held, "the first run did not reach the producer")
	resp = h.post("/agent", testkit.MinimalInput, origin...)
	wantPolicy("503", resp, 503)
}

// Without a policy the relay does no CORS: the producer's preflight response
// and CORS headers pass through untouched, and the relay's own problems
// carry none.
func TestNoCORSPassesTheProducersThrough(t *testing.T) {
	var preflights atomic.Int32
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", pageOrigin)
		w.Header().Set("Vary", "Origin")
		if r.Method == "OPTIONS" {
			preflights.Add(1)
			w.Header().Set("Access-Control-Allow-Methods", "POST")
			w.Header().Set("Access-Control-Allow-Headers", "content-type")
			w.WriteHeader(204)
			return
		}
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
			`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
	}, nil)
	resp := h.preflight(pageOrigin)
	if resp.StatusCode != 204 || preflights.Load() != 1 {
		t.Fatalf("status %d, %d preflights at the producer", resp.StatusCode, preflights.Load())
	}
	wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
	wantHeader(t, resp, "Access-Control-Allow-Methods", "POST")
	wantHeader(t, resp, "Access-Control-Allow-Headers", "content-type")
	wantHeader(t, resp, "Vary", "Origin")

	resp = h.post("/agent", testkit.MinimalInput, "Origin", pageOrigin)
	testkit.ReadAll(t, resp)
	wantHeader(t, resp, "Access-Control-Allow-Origin", pageOrigin)
	wantHeader(t, resp, "Vary", "Origin")
	h.report()

	resp = h.post("/agent", `{"messages":"none"}`, "Origin", pageOrigin)
	testkit.ReadAll(t, resp)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	wantHeader(t, resp, "Access-Control-Allow-Origin", "")
	wantHeader(t, resp, "Vary", "")
}

// A request the server cannot read (here: a body over the route's limit)
// is answered with the CORS headers of the route its path names.
func TestRouterProblemsCarryTheRoutesCORS(t *testing.T) {
	producer := &Relay{Upstream: testkit.ClosedURL(t), MaxBody: 64}
	withCORS := &Relay{Upstream: testkit.ClosedURL(t), MaxBody: 64, CORS: mustCORS(t, CORSOptions{AllowOrigins: []string{pageOrigin}})}
	table, err := NewTable([]Route{{Name: "web", Prefix: "/web", Relay: withCORS}, {Name: "other", Prefix: "/", Relay: producer}})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRouter(table, 64, nil)
	addr := testkit.Serve(t, rt.Server(), Listener)
	client := &http.Client{}
	big := strings.NewReader(`{"pad":"` + strings.Repeat("x", 100) + `"}`)
	for _, c := range []struct{ path, allow string }{{"/web/agent", pageOrigin}, {"/agent", ""}} {
		big.Seek(0, 0)
		req, _ := http.NewRequest("POST", "http://"+addr+c.path, big)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", pageOrigin)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		testkit.ReadAll(t, resp)
		if resp.StatusCode != 413 {
			t.Errorf("%s: status %d", c.path, resp.StatusCode)
		}
		wantHeader(t, resp, "Access-Control-Allow-Origin", c.allow)

		// The same with Expect: 100-continue, answered before the upload.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: relay\r\nOrigin: %s\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n", c.path, pageOrigin)
		resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		testkit.ReadAll(t, resp)
		conn.Close()
		if resp.StatusCode != 413 {
			t.Errorf("%s, Expect: 100-continue: status %d", c.path, resp.StatusCode)
		}
		wantHeader(t, resp, "Access-Control-Allow-Origin", c.allow)
	}
}
