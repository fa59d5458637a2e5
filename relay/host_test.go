package relay

import (
	"encoding/json"
	"strings"
	"testing"
)

// A request without a Host header, which HTTP/1.1 requires, and one with
// two are refused with 400, each named for what it is (issue #31: the
// first was answered "more than one Host header").
func TestHostHeaderFaultsAreNamed(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	for _, tc := range []struct{ name, request, kind string }{
		{"no Host", "GET /x HTTP/1.1\r\nConnection: close\r\n\r\n", "no Host header"},
		{"no Host, a run", "POST /x HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", "no Host header"},
		{"two Hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n", "more than one Host header"},
	} {
		got := rawExchange(t, addr, tc.request)
		_, body, _ := strings.Cut(got, "\r\n\r\n")
		var p Problem
		if statusOf(got) != 400 || json.Unmarshal([]byte(body), &p) != nil || p.Type != "urn:agui-relay:bad-request" || p.Detail != tc.kind {
			t.Errorf("%s: %q, want 400 bad-request %q", tc.name, got, tc.kind)
		}
	}
	if n := len(seen()); n != 0 {
		t.Errorf("the producer was contacted %d times", n)
	}
}
