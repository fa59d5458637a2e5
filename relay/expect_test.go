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

// A request that sends Expect: 100-continue with a Content-Length over the
// body limit is answered 413 at once, before its body is uploaded: the
// relay never says 100 Continue to it. Under the limit, it is told to go on
// and its run is relayed (issue #24, item 6). Both with and without routes,
// whose limits are their own.
func TestExpectContinueOverTheLimitIs413BeforeTheUpload(t *testing.T) {
	h, seen := recordingProducer(t, func(r *Relay) { r.MaxBody = 1000 })
	tab, err := NewTable([]Route{{Name: "small", Prefix: "/small", Relay: &Relay{Upstream: h.producer.URL, MaxBody: 100}},
		{Name: "root", Prefix: "/", Relay: &Relay{Upstream: h.producer.URL, MaxBody: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	routed := serveRaw(t, NewRouter(tab, 0, nil).Server())
	direct := strings.TrimPrefix(h.url, "http://")
	input := `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`
	for _, tc := range []struct {
		name, addr, path string
		length           int
		continued        bool
	}{
		{"over --max-body", direct, "/run", 1001, false},
		{"over the route's maxBody", routed, "/small/run", 101, false},
		{"under the limit", direct, "/run", len(input), true},
		{"under the router's limit, over the route's", routed, "/small/run", 500, false},
	} {
		c, err := net.Dial("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(testkit.Liveness)) //nolint:errcheck
		io.WriteString(c, "POST "+tc.path+" HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: "+
			strconv.Itoa(tc.length)+"\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil) // the interim or final response, before any body byte is sent
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.continued {
			b, _ := io.ReadAll(resp.Body)
			var p Problem
			json.Unmarshal(b, &p) //nolint:errcheck
			if resp.StatusCode != 413 || p.Type != "urn:agui-relay:body-too-large" {
				t.Errorf("%s: %d %s, want 413 body-too-large before the upload", tc.name, resp.StatusCode, b)
			}
			c.Close()
			continue
		}
		if resp.StatusCode != 100 {
			t.Fatalf("%s: %d, want 100 Continue", tc.name, resp.StatusCode)
		}
		io.WriteString(c, input)
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), "RUN_FINISHED") {
			t.Errorf("%s: %d %q, want the run", tc.name, resp.StatusCode, b)
		}
		c.Close()
	}
	if n := len(seen()); n != 1 {
		t.Errorf("the producer saw %d requests, want the one under the limit", n)
	}
}
