package relay

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A request whose header ends a line in a bare LF is answered 400 at once,
// not left waiting for a CRLF until the client gives up (issue #24, item
// 6): on a connection's first request, and on the request after a stream
// on a persistent connection. A body with bare LFs (pretty-printed JSON) is
// never mistaken for a header.
func TestBareLFRequestHeadersAreRefused(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	refuse := func(t *testing.T, out, what string) {
		t.Helper()
		_, body, _ := strings.Cut(out, "\r\n\r\n")
		var p Problem
		json.Unmarshal([]byte(body), &p) //nolint:errcheck
		if statusOf(out) != 400 || p.Detail != "a line ending in a bare LF (want CRLF)" {
			t.Errorf("%s: want 400 naming the bare LF, got %q", what, out)
		}
	}
	for name, raw := range map[string]string{
		"every line":           "GET /x HTTP/1.1\nHost: relay\nConnection: close\n\n",
		"the request line":     "GET /x HTTP/1.1\nHost: relay\r\nConnection: close\r\n\r\n",
		"one header line":      "GET /x HTTP/1.1\r\nHost: relay\nConnection: close\r\n\r\n",
		"the last line":        "GET /x HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\n",
		"a run's, with a body": "POST /run HTTP/1.1\nHost: relay\nContent-Type: application/json\nContent-Length: 2\n\n{}",
	} {
		refuse(t, rawExchange(t, addr, raw), name)
	}

	// After a stream on a persistent connection.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
	pretty := "{\n  \"threadId\": \"t1\",\n  \"runId\": \"r1\",\n  \"messages\": [],\n  \"protocolVersion\": \"1.0\"\n}"
	io.WriteString(c, "POST /run HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(pretty))+"\r\n\r\n"+pretty)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "RUN_FINISHED") || resp.Close {
		t.Fatalf("a run whose body has bare LFs: %d close=%v %q", resp.StatusCode, resp.Close, b)
	}
	io.WriteString(c, "GET /x HTTP/1.1\nHost: relay\n\n")
	rest, _ := io.ReadAll(br)
	refuse(t, string(rest), "after a stream")
	if n := len(seen()); n != 1 {
		t.Errorf("the producer saw %d requests, want the one run", n)
	}
}

// The header scan gives one verdict however the header is split into
// reads, and stops at the header's end: a body's bare LFs are not looked at.
func TestHeaderScanAnySplit(t *testing.T) {
	for wire, bad := range map[string]bool{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n{\n\"a\": 1\n}\n": false,
		"\r\n\nGET / HTTP/1.1\r\nHost: x\r\n\r\n":           false, // empty lines before the request line
		"GET / HTTP/1.1\nHost: x\r\n\r\n":                   true,
		"GET / HTTP/1.1\r\nHost: x\r\n\n":                   true,
		"GET / HTTP/1.1\r\nHost: x\n\n":                     true,
		"GET / HTTP/1.1\r\nHost: x\r\r\n\r\n":               false, // a CR inside a line is the parser's business
	} {
		for cut := 0; cut <= len(wire); cut++ {
			for second := cut; second <= len(wire); second++ {
				var h headerScan
				h.arm()
				got := h.scan([]byte(wire[:cut])) || h.scan([]byte(wire[cut:second])) || h.scan([]byte(wire[second:]))
				if got != bad {
					t.Fatalf("%q cut at %d and %d: bare LF %v, want %v", wire, cut, second, got, bad)
				}
			}
		}
	}
}
