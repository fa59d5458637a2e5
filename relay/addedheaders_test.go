package relay

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// The producer gets the consumer's end-to-end headers and no other but the
// relay's own (X-Forwarded-*, a run's Accept and Accept-Encoding) and the
// framing: a request with a body and no Content-Type reaches it without
// one, where fasthttp's client added application/octet-stream (issue #31),
// and without a User-Agent.
func TestNoHeaderAddedThatTheConsumerDidNotSend(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	run := testkit.MinimalInput
	for _, tc := range []struct{ name, request string }{
		{"GET with a body", "GET /x HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"},
		{"PUT with a body", "PUT /x HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"},
		{"DELETE with a chunked body", "DELETE /x HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{"a run without a Content-Type", "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Length: " + strconv.Itoa(len(run)) + "\r\nConnection: close\r\n\r\n" + run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen())
			if got := rawExchange(t, addr, tc.request); statusOf(got) != 200 {
				t.Fatalf("response %q", got)
			}
			reqs := seen()[before:]
			if len(reqs) != 1 {
				t.Fatalf("the producer saw %d requests", len(reqs))
			}
			for k := range reqs[0].header {
				switch http.CanonicalHeaderKey(k) {
				case "Content-Length", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Accept", "Accept-Encoding":
				default:
					t.Errorf("the producer got %s: %q, which the consumer did not send", k, reqs[0].header[k])
				}
			}
			if reqs[0].body != "hello" && reqs[0].body != run {
				t.Errorf("body %q", reqs[0].body)
			}
		})
	}
}
