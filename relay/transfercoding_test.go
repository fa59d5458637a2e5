package relay

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A request whose Transfer-Encoding is anything but chunked (alone) is
// refused with 400 and its connection closed: nothing after it on the
// connection is read as a request (RFC 9112 §6.1), so that a request
// smuggled behind it never reaches the producer (issue #31). fasthttp
// accepts "identity" and forgets it: the body was then framed by the
// Content-Length, or taken as empty, and the rest read as the next request.
func TestTransferEncodingOtherThanChunkedClosesTheConnection(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	// The relay alone, and behind a Router (which checks before a route is
	// matched: a path of no route would otherwise be answered 404 and the
	// connection kept alive).
	for name, addr := range map[string]string{
		"relay":  strings.TrimPrefix(h.url, "http://"),
		"router": testkit.Serve(t, NewRouter(oneRoute(t, h.producer.URL+"/p", 0), 0, nil).Server(), Listener),
	} {
		t.Run(name, func(t *testing.T) { checkTransferCodings(t, addr, seen) })
	}
}

func checkTransferCodings(t *testing.T, addr string, seen func() []seenRequest) {
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	run := testkit.MinimalInput
	for _, tc := range []struct{ name, request string }{
		{"identity, no body", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: identity\r\n\r\n"},
		{"IDENTITY", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: IDENTITY\r\n\r\n"},
		{"identity with a Content-Length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: identity\r\nContent-Length: " + strconv.Itoa(len(run)) + "\r\n\r\n" + run},
		{"Content-Length then identity", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(run)) + "\r\nTransfer-Encoding: identity\r\n\r\n" + run},
		{"identity on a GET", "GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n"},
		{"identity on a proxied POST", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello"},
		{"identity with spaces", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding:  identity \r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen())
			got := rawExchange(t, addr, tc.request+smuggled)
			if n := strings.Count(got, "HTTP/1.1 "); n != 1 {
				t.Fatalf("%d responses, want 1 and the connection closed: %q", n, got)
			}
			if code := statusOf(got); code != 400 || !strings.Contains(got, "application/problem+json") ||
				!strings.Contains(got, `"detail":"unsupported Transfer-Encoding"`) || !strings.Contains(got, "Connection: close") {
				t.Fatalf("response %q", got)
			}
			if reqs := seen()[before:]; len(reqs) != 0 {
				t.Fatalf("the producer saw %+v", reqs)
			}
		})
	}
	// chunked alone, in any case, is still served, and keeps the connection.
	got := rawExchange(t, addr, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
		"GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if n := strings.Count(got, "HTTP/1.1 200 "); n != 2 {
		t.Errorf("chunked request and the one after it: %q", got)
	}
}
