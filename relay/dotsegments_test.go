package relay

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// serveRaw serves srv on a new listener (the relay's) and returns its
// address.
func serveRaw(t *testing.T, srv *fasthttp.Server) string {
	t.Helper()
	return testkit.Serve(t, srv, Listener)
}

// Dot segments, plain or percent-encoded in any case, never reach the
// producer: appended to the upstream's base path or after a route's prefix
// they could name something outside it (issue #24, item 5). They are
// refused with 400 before the producer is contacted; paths whose segments
// only contain dots among other bytes are forwarded as they came.
func TestDotSegmentsNeverReachTheProducer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	producer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(producer.Close)
	seenNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}

	refused := []string{
		"/../private",
		"/x/%2e%2e/%2e%2e/private",
		"/x/%2E%2e/private",
		"/x/.%2E/private",
		"/x/%2e./private",
		"/x/..",
		"/x/./y",
		"/x/%2e/y",
		"/x/..%2fprivate",
		"/x/..%5Cprivate",
		"/x/..\\private",
		"/../private?q=1",
		"/x/..;/private",
		"/x/..;jsessionid=1/private",
		"/x/%2e%2e%3b/private",
		"/x/.;/y",
	}
	forwarded := []string{"/x/..y/z", "/x/.../y", "/x/a.b/c", "/x/.hidden", "/x?p=/../q", "/x/%2e%2ex/y", "/x/a;b/c", "/x/a..;/c", "/x/...;/c"}

	// One relay whose upstream has a base path, and a router whose route
	// strips its prefix in front of the same producer.
	direct := &Relay{Upstream: producer.URL + "/api", Log: zap.NewNop()}
	routed := &Relay{Upstream: producer.URL + "/api", StripPrefix: "/agents/a", Log: zap.NewNop()}
	tab, err := NewTable([]Route{{Name: "a", Prefix: "/agents/a", Relay: routed}, {Name: "root", Prefix: "/", Relay: &Relay{Upstream: producer.URL + "/root", Log: zap.NewNop()}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		addr   string
		prefix string // what the consumer puts before each path
		base   string // what the producer sees before it
	}{
		{name: "upstream base path", addr: serveRaw(t, direct.Server()), base: "/api"},
		{name: "route prefix", addr: serveRaw(t, NewRouter(tab, 0, nil).Server()), prefix: "/agents/a", base: "/api"},
	} {
		for _, p := range refused {
			out := rawExchange(t, tc.addr, "GET "+tc.prefix+p+" HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
			if statusOf(out) != 400 || !strings.Contains(out, "urn:agui-relay:dot-segment") {
				t.Errorf("%s: %q: want 400 dot-segment, got:\n%s", tc.name, p, out)
			}
			if got := seenNow(); len(got) > 0 {
				t.Errorf("%s: %q reached the producer as %q", tc.name, p, got)
			}
		}
		for _, p := range forwarded {
			out := rawExchange(t, tc.addr, "GET "+tc.prefix+p+" HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
			if statusOf(out) != 200 {
				t.Errorf("%s: %q: status %d, want the producer's 200", tc.name, p, statusOf(out))
			}
			if got := seenNow(); len(got) != 1 || got[0] != tc.base+p {
				t.Errorf("%s: %q reached the producer as %q, want %q", tc.name, p, got, tc.base+p)
			}
		}
	}
}
