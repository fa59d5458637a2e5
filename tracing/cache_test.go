package tracing

import (
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// What the spans of many producer URLs share is made once each, for at
// most spanCacheSize of them: a relay whose consumers send a new path or
// query with each request holds no more, and the URLs past them are still
// given right (redacted).
func TestSpanCacheIsBounded(t *testing.T) {
	tr := newTracer(sdktrace.NewTracerProvider(), Destination{}, "")
	first := tr.upstream("http://user:secret@agent:8000/agent?token=1")
	if first.redacted != "http://redacted@agent:8000/agent?redacted" || first.full != first.redacted || first.addr != "agent" || first.port != 8000 {
		t.Fatalf("%+v", *first)
	}
	if tr.upstream("http://user:secret@agent:8000/agent?token=1") != first {
		t.Error("the same URL made twice")
	}
	for i := range 2 * spanCacheSize {
		u := "http://agent/runs/" + strconv.Itoa(i) + "?key=secret"
		if up := tr.upstream(u); up.redacted != "http://agent/runs/"+strconv.Itoa(i)+"?redacted" || up.port != 80 {
			t.Fatalf("%s: %+v", u, *up)
		}
		if name := tr.spanName("POST", "/"+strconv.Itoa(i)); name != "POST /"+strconv.Itoa(i) {
			t.Fatalf("span name %q", name)
		}
	}
	if n, m := len(tr.cache.upstreams), len(tr.cache.names); n != spanCacheSize || m != spanCacheSize {
		t.Errorf("%d URLs and %d span names held, want %d at most", n, m, spanCacheSize)
	}
}

// splitHost reads a Host header as net.SplitHostPort does, the scheme's
// port where it names none.
func TestSplitHost(t *testing.T) {
	for _, c := range []struct {
		host, scheme, addr string
		port               int
	}{
		{"relay.example:8080", "http", "relay.example", 8080},
		{"relay.example", "https", "relay.example", 443},
		{"relay.example", "http", "relay.example", 80},
		{"[::1]:8080", "http", "::1", 8080},
		{"[::1]", "https", "::1", 443},
		{"::1", "http", "::1", 80},
		{"relay.example:x", "http", "relay.example", 80},
		{"", "http", "", 0},
	} {
		if addr, port := splitHost(c.host, c.scheme); addr != c.addr || port != c.port {
			t.Errorf("%q: %q %d, want %q %d", c.host, addr, port, c.addr, c.port)
		}
	}
}
