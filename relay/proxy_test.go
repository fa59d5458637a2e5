package relay

import (
	"bufio"
	"strings"
	"testing"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// Header names reach the producer normalised, as fasthttp writes them,
// whether or not the consumer's request was read with its names
// normalised, and neither header's setting changes.
func TestCopyRequestHeadersNormalisesNames(t *testing.T) {
	for _, asSent := range []bool{false, true} {
		var src fasthttp.RequestHeader
		if asSent {
			src.DisableNormalizing()
		}
		if err := src.Read(bufio.NewReader(strings.NewReader("POST /a HTTP/1.1\r\nhost: r\r\nx-tenant-ID: 7\r\n" +
			"connection: keep-alive, x-hop\r\nx-hop: 1\r\naccept: text/event-stream\r\n\r\n"))); err != nil {
			t.Fatal(err)
		}
		var dst fasthttp.RequestHeader
		copyRequestHeaders(&dst, &src)
		var got []string
		for k, v := range dst.All() {
			got = append(got, string(k)+": "+string(v))
		}
		if strings.Join(got, "; ") != "X-Tenant-Id: 7; Accept: text/event-stream" {
			t.Errorf("names as sent %v: producer's headers %q", asSent, got)
		}
		if src.DisableNormalizing() != asSent || dst.DisableNormalizing() {
			t.Errorf("names as sent %v: a header's normalising changed", asSent)
		}
	}
}

// hopLengths has the length of every hop-by-hop header's name and no
// other: isHop finds each, in any case, and no other name.
func TestHopLengths(t *testing.T) {
	want := 0
	for _, h := range hopHeaders {
		want |= 1 << len(h)
		if !isHop([]byte(strings.ToLower(h))) {
			t.Errorf("%s is not hop-by-hop", h)
		}
	}
	if hopLengths != want {
		t.Errorf("hopLengths %b, want %b", hopLengths, want)
	}
	for _, k := range []string{"Content-Type", "Accept", "Tee", "Upgrades", ""} {
		if isHop([]byte(k)) {
			t.Errorf("%q is hop-by-hop", k)
		}
	}
}

// A run's URL is where it was sent, whichever came before; one that
// repeats the last is given the same string, not a copy.
func TestUpstreamURL(t *testing.T) {
	var r Relay
	var a, b fasthttp.URI
	a.Parse(nil, []byte("http://agent:8000/run?x=1")) //nolint:errcheck // valid
	b.Parse(nil, []byte("http://agent:8000/other"))   //nolint:errcheck // valid
	first := r.upstreamURL(&a)
	for i, c := range []struct {
		uri  *fasthttp.URI
		want string
	}{{&a, "http://agent:8000/run?x=1"}, {&b, "http://agent:8000/other"}, {&a, "http://agent:8000/run?x=1"}, {&a, "http://agent:8000/run?x=1"}} {
		if got := r.upstreamURL(c.uri); got != c.want || got != c.uri.String() {
			t.Errorf("run %d: %q, want %q", i, got, c.want)
		}
	}
	if again := r.upstreamURL(&a); unsafe.StringData(again) != unsafe.StringData(r.upstreamURL(&a)) || first != again {
		t.Error("a repeated URL was copied")
	}
}
