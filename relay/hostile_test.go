package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/rules"
)

// Hostile or broken input (issue #7): clear problem+json responses before the
// producer is contacted, or faithful forwarding; never a panic, never a
// request sent anywhere but the configured upstream.

// rawExchange sends raw bytes on a new connection to addr and returns all
// the relay answers until it closes the connection (requests should say
// Connection: close) or the liveness bound passes.
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testkit.Liveness))
	b, _ := io.ReadAll(c)
	return string(b)
}

// statusOf returns the status code of the first response in raw, 0 when
// there is none.
func statusOf(raw string) int {
	var code int
	fmt.Sscanf(raw, "HTTP/1.1 %d", &code)
	return code
}

// seenRequest is what a test producer saw of a request.
type seenRequest struct {
	method, uri, host string
	te                []string
	cl                int64
	body              string
	header            http.Header
}

// recordingProducer answers every request with "from the producer" (an
// event stream for runs) and records it.
func recordingProducer(t *testing.T, configure func(*Relay)) (*harness, func() []seenRequest) {
	var mu sync.Mutex
	var seen []seenRequest
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.RequestURI, r.Host, r.TransferEncoding, r.ContentLength, string(b), r.Header.Clone()})
		mu.Unlock()
		if r.Method == "POST" && strings.Contains(r.Header.Get("Content-Type"), "json") {
			testkit.StreamHeaders(w)
			testkit.SSE(w, testkit.RunStarted, testkit.RunFinished)
			return
		}
		io.WriteString(w, "from the producer")
	}, func(r *Relay) {
		r.Tap = nil // these tests make more runs than the harness keeps reports
		if configure != nil {
			configure(r)
		}
	})
	return h, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

// No request target can make the relay contact a host other than its
// upstream: absolute-form and authority-form targets are refused, and the
// Host header, "//host" paths and "@host" tricks only ever reach the
// configured producer.
func TestRequestTargetsCannotSteerTheRelay(t *testing.T) {
	evil, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var contacted atomic.Int64
	go func() {
		for {
			c, err := evil.Accept()
			if err != nil {
				return
			}
			contacted.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nevil")
			c.Close()
		}
	}()
	defer evil.Close()
	ev := evil.Addr().String()
	_, evPort, _ := net.SplitHostPort(ev)
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	producerHost := strings.TrimPrefix(h.producer.URL, "http://")

	run := "Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(testkit.MinimalInput)) + "\r\n\r\n" + testkit.MinimalInput
	for _, tc := range []struct {
		name, request string
		status        int    // what the consumer gets
		uri           string // what the producer sees, "" when it is not contacted
	}{
		{"absolute-form", "GET http://" + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"absolute-form https", "GET https://" + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"absolute-form run", "POST http://" + ev + "/agent HTTP/1.1\r\nHost: " + ev + "\r\n" + run, 400, ""},
		{"absolute-form, Host of the relay", "GET http://" + ev + "/x HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", 400, ""},
		{"CONNECT", "CONNECT " + ev + " HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"CONNECT port only", "CONNECT :" + evPort + " HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"@host", "GET @" + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"relative", "GET " + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 400, ""},
		{"//host path", "GET //" + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 200, "//" + ev + "/x"},
		{"//host run", "POST //" + ev + "/agent HTTP/1.1\r\nHost: " + ev + "\r\n" + run, 200, "//" + ev + "/agent"},
		{"@ in the path", "GET /x@" + ev + "/y HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 200, "/x@" + ev + "/y"},
		{"backslashes", "GET /\\\\" + ev + "/x HTTP/1.1\r\nHost: " + ev + "\r\n\r\n", 200, "/\\\\" + ev + "/x"},
		{"Host header", "GET /x HTTP/1.1\r\nHost: " + ev + "\r\nX-Forwarded-Host: " + ev + "\r\nForwarded: host=" + ev + "\r\n\r\n", 200, "/x"},
		{"Host header run", "POST /agent HTTP/1.1\r\nHost: " + ev + "\r\n" + run, 200, "/agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen())
			raw := tc.request
			if i := strings.Index(raw, "\r\n"); i >= 0 {
				raw = raw[:i+2] + "Connection: close\r\n" + raw[i+2:]
			}
			got := rawExchange(t, addr, raw)
			if code := statusOf(got); code != tc.status {
				t.Fatalf("status %d, want %d: %q", code, tc.status, got)
			}
			if tc.status == 400 && !strings.Contains(got, "application/problem+json") {
				t.Errorf("not a problem+json response: %q", got)
			}
			after := seen()
			if tc.uri == "" {
				if len(after) != before {
					t.Errorf("the producer was contacted: %+v", after[before:])
				}
				return
			}
			if len(after) != before+1 || after[before].uri != tc.uri || after[before].host != producerHost {
				t.Errorf("producer saw %+v, want %q on host %q", after[before:], tc.uri, producerHost)
			}
		})
	}
	if n := contacted.Load(); n != 0 {
		t.Errorf("the relay contacted another host %d times", n)
	}
}

// Request smuggling: ambiguous framing is refused, or the request is
// re-framed (one Content-Length, no Transfer-Encoding, no folded header),
// so that the producer splits the connection into exactly the requests
// the relay answered.
func TestSmugglingAttemptsAreRefusedOrReframed(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n"
	for _, tc := range []struct {
		name, request string
		refused       bool
	}{
		{"CL then TE", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, false},
		{"TE then CL", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n" + smuggled, false},
		{"two Content-Lengths", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nContent-Length: 59\r\n\r\n" + smuggled, true},
		{"obfuscated TE", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\nhello" + smuggled, true},
		{"TE list", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + smuggled, true},
		{"space before colon", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\nhello" + smuggled, true},
		{"bad chunk size", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n" + smuggled, true},
		{"two Hosts", "GET /x HTTP/1.1\r\nHost: r\r\nHost: evil\r\n\r\n", true},
		{"no Host", "GET /x HTTP/1.1\r\n\r\n", true},
		{"folded TE", "POST /up HTTP/1.1\r\nHost: r\r\nContent-Type: text/plain\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello" + smuggled, false},
		{"bare LF", "POST /up HTTP/1.1\nHost: r\nContent-Type: text/plain\nContent-Length: 5\n\nhello" + smuggled, true}, // bareLF_test.go
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen())
			got := rawExchange(t, addr, tc.request)
			answered := strings.Count(got, "HTTP/1.1 ")
			reqs := seen()[before:]
			if tc.refused {
				if code := statusOf(got); code != 400 || len(reqs) != 0 {
					t.Fatalf("status %d, producer saw %+v: %q", code, reqs, got)
				}
				return
			}
			if len(reqs) == 0 || len(reqs) != answered {
				t.Fatalf("the relay answered %d requests, the producer saw %d: %q", answered, len(reqs), got)
			}
			for _, r := range reqs {
				if len(r.te) > 0 || r.cl != int64(len(r.body)) {
					t.Errorf("producer got %s %s framed with TE %v, length %d for %d bytes", r.method, r.uri, r.te, r.cl, len(r.body))
				}
				for k, vs := range r.header {
					for _, v := range vs {
						if strings.ContainsAny(v, "\r\n") || strings.EqualFold(k, "Transfer-Encoding") {
							t.Errorf("producer got header %s: %q", k, v)
						}
					}
				}
			}
		})
	}
}

// Headers beyond the read buffer are refused with 431, and the relay goes
// on serving.
func TestHeaderFloodsAreRefused(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	for name, req := range map[string]string{
		"one long header": "GET /x HTTP/1.1\r\nHost: r\r\nX-Long: " + strings.Repeat("a", 20<<10) + "\r\n\r\n",
		"many headers":    "GET /x HTTP/1.1\r\nHost: r\r\n" + strings.Repeat("X-Flood: aaaaaaaaaaaaaaaaaaaaaaaa\r\n", 2000) + "\r\n",
		"long target":     "GET /" + strings.Repeat("a", 20<<10) + " HTTP/1.1\r\nHost: r\r\n\r\n",
	} {
		got := rawExchange(t, addr, req)
		if code := statusOf(got); code != 431 || !strings.Contains(got, "urn:agui-relay:headers-too-large") {
			t.Errorf("%s: %q", name, got)
		}
	}
	if n := len(seen()); n != 0 {
		t.Errorf("the producer was contacted %d times", n)
	}
	// Just under the limit is served.
	got := rawExchange(t, addr, "GET /x HTTP/1.1\r\nHost: r\r\nConnection: close\r\nX-Long: "+strings.Repeat("a", 12<<10)+"\r\n\r\n")
	if !strings.HasSuffix(got, "from the producer") {
		t.Errorf("a request with 12 KiB of headers: %q", got)
	}
}

// The server bounds how long a client may take to send its request: a
// client that trickles its headers or body, or sends nothing at all, is
// cut off after the read timeout (2 minutes by default; shortened here).
func TestSlowClientsAreCutOff(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	r := &Relay{Upstream: h.producer.URL}
	srv := r.Server()
	srv.ReadTimeout = 300 * time.Millisecond
	srv.IdleTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Shutdown()
	for name, trickle := range map[string]struct{ header, drip string }{
		"headers": {"POST /agent HTTP/1.1\r\nHost: r\r\n", "X-Slow: 1\r\n"},
		"body":    {"POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", "[1,"},
		"silence": {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, trickle.header)
			start := time.Now()
			closed := make(chan struct{})
			go func() {
				io.Copy(io.Discard, c)
				close(closed)
			}()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-closed:
					t.Logf("cut off after %v", time.Since(start))
					return
				case <-tick.C:
					if trickle.drip != "" {
						io.WriteString(c, trickle.drip)
					}
					if time.Since(start) > testkit.Liveness {
						t.Fatal("the relay still holds the connection of a client that never finishes its request")
					}
				}
			}
		})
	}
	if n := len(seen()); n != 0 {
		t.Errorf("the producer was contacted %d times", n)
	}
}

// The server's limits, as documented in the README, and its idle workers' life
// (docs/reference.md, Scaling).
func TestServerDefaults(t *testing.T) {
	srv := (&Relay{Upstream: "http://127.0.0.1:1"}).Server()
	if srv.ReadTimeout != 2*time.Minute || srv.WriteTimeout != 2*time.Minute || srv.IdleTimeout != 2*time.Minute ||
		srv.ReadBufferSize != 16<<10 || srv.MaxRequestBodySize != 64<<20 || !srv.TCPKeepalive || !srv.StreamRequestBody ||
		srv.MaxIdleWorkerDuration != time.Second {
		t.Errorf("server %+v", srv)
	}
}

// deep nests n arrays.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// Hostile bodies: each is refused with a problem before the producer is
// contacted, or forwarded byte for byte.
func TestHostileBodies(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	input := func(props string) string {
		return `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[],"forwardedProps":` + props + `}`
	}
	huge := `"` + strings.Repeat("\\u00e9\\\"x", 1<<20) + `"` // 8 MiB of escapes
	for _, tc := range []struct {
		name, body string
		status     int
		pointer    string // of the first error, for 400
	}{
		{"nested too deep", input(deep(rules.MaxNesting + 1)), 400, ""},
		// 16 MiB of "[": deep enough to exhaust the goroutine stack of
		// a recursive validator, which is a fatal error of the process.
		{"nested 8M deep", deep(8 << 20), 400, ""},
		{"nested as deep as allowed", input(deep(rules.MaxNesting - 1)), 200, ""},
		{"not JSON", `{"threadId":"t1",`, 400, ""},
		{"a JSON string", `"run"`, 400, ""},
		{"empty", ``, 400, ""},
		{"invalid UTF-8 in a message", `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[{"id":"m1","role":"user","content":"caf` + "\xe9\xff" + `"}]}`, 200, ""},
		{"invalid UTF-8 in forwardedProps", input(`{"k":"` + "\xc3\x28\xa0\xa1" + `"}`), 200, ""},
		{"lone surrogate", input(`"\ud800"`), 200, ""},
		{"duplicate runId", `{"threadId":"t1","runId":"r1","runId":"r2","protocolVersion":"1.0","messages":[]}`, 400, "/runId"},
		{"duplicate key in forwardedProps", input(`{"a":1,"a":2}`), 200, ""},
		{"huge string", input(huge), 200, ""},
		{"huge message", `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[{"id":"m1","role":"user","content":` + huge + `}]}`, 200, ""},
		{"forwardedProps object", input(`{"x":{"y":[1,null,true]}}`), 200, ""},
		{"forwardedProps empty object", input(`{}`), 200, ""},
		{"forwardedProps array", input(`[1,"two",{"three":3}]`), 200, ""},
		{"forwardedProps string", input(`"s\u0000"`), 200, ""},
		{"forwardedProps number", input(`-1.5e+300`), 200, ""},
		{"forwardedProps big number", input(`123456789012345678901234567890`), 200, ""},
		{"forwardedProps true", input(`true`), 200, ""},
		{"forwardedProps false", input(`false`), 200, ""},
		// 1.0 forbids a null forwardedProps: refused, never rewritten.
		{"forwardedProps null", input(`null`), 400, "/forwardedProps"},
		{"forwardedProps with whitespace", input(" \t\n{ \"a\" : [ ] }\n"), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen())
			resp := h.post("/agent", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, testkit.ReadAll(t, resp))
			}
			after := seen()
			if tc.status != 200 {
				p := problemOf(t, resp)
				if len(p.Errors) == 0 || p.Errors[0].Pointer != tc.pointer || p.Errors[0].Reason == "" {
					t.Errorf("problem %+v", p)
				}
				if len(after) != before {
					t.Errorf("the producer was contacted")
				}
				return
			}
			if got := testkit.ReadAll(t, resp); !strings.HasSuffix(got, testkit.RunFinished) {
				t.Errorf("stream %q", got)
			}
			if len(after) != before+1 || after[before].body != tc.body {
				t.Errorf("the producer did not get the body byte for byte")
			}
		})
	}
}

// A body over --max-body is refused with 413 however it is framed, before
// the producer is contacted.
func TestBodyOverMaxIs413Chunked(t *testing.T) {
	h, seen := recordingProducer(t, func(r *Relay) { r.MaxBody = 1 << 10 })
	addr := strings.TrimPrefix(h.url, "http://")
	body := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[],"pad":"` + strings.Repeat("x", 2<<10) + `"}`
	got := rawExchange(t, addr, "POST /agent HTTP/1.1\r\nHost: r\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		chunk(body[:500])+chunk(body[500:])+"0\r\n\r\n")
	if code := statusOf(got); code != 413 || !strings.Contains(got, "urn:agui-relay:body-too-large") {
		t.Errorf("%q", got)
	}
	var p Problem
	if i := strings.Index(got, "{"); i < 0 || json.Unmarshal([]byte(got[i:]), &p) != nil || p.Status != 413 {
		t.Errorf("problem %q", got)
	}
	if n := len(seen()); n != 0 {
		t.Errorf("the producer was contacted %d times", n)
	}
	// A body just at the limit is relayed.
	at := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[],"pad":"` + strings.Repeat("x", 1<<10-77) + `"}`
	if len(at) != 1<<10 {
		t.Fatalf("len %d", len(at))
	}
	if resp := h.post("/agent", at); resp.StatusCode != 200 {
		t.Errorf("a body at the limit: %d", resp.StatusCode)
	} else {
		testkit.ReadAll(t, resp)
	}
}
