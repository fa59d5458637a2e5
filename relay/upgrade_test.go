//go:build unix

package relay

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A producer that answers 101 Switching Protocols, to a run or to any other
// request, gets the consumer a 502 problem that says why, not a bare 101
// followed by silence (issue #24, item 3). The relay tunnels no upgrade: a
// consumer's Upgrade header is hop-by-hop and never reaches the producer,
// which answers the request as an ordinary one.
func TestProducerSwitchingProtocolsIs502(t *testing.T) {
	var mu sync.Mutex
	var upgrades []string // the Upgrade header of each request the producer saw
	upstream := "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body) //nolint:errcheck
		mu.Lock()
		upgrades = append(upgrades, req.Header.Get("Upgrade"))
		mu.Unlock()
		if req.URL.Path == "/plain" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nplain")
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-agent\r\nConnection: Upgrade\r\n\r\n"+
			"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n")
		io.Copy(io.Discard, c) //nolint:errcheck // hold the connection as an upgraded one would
	})
	reports := make(chan *RunReport, 4)
	addr, _ := rawRelay(t, upstream, func(rep *RunReport) { c := *rep; reports <- &c })

	input := `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`
	for name, raw := range map[string]string{
		"a run":                "POST /run HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(input)) + "\r\n\r\n" + input,
		"a request, not a run": "GET /other HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n",
	} {
		out := rawExchange(t, addr, raw)
		if statusOf(out) != 502 {
			t.Fatalf("%s: status %d, want 502:\n%s", name, statusOf(out), out)
		}
		_, body, _ := strings.Cut(out, "\r\n\r\n")
		var p Problem
		if err := json.Unmarshal([]byte(body), &p); err != nil || p.Type != "urn:agui-relay:upstream-upgrade" || !strings.Contains(p.Detail, "101") {
			t.Errorf("%s: problem %+v (%v), want upstream-upgrade naming the 101:\n%s", name, p, err, out)
		}
		if strings.Contains(out, "RUN_STARTED") || strings.Contains(strings.ToLower(out), "upgrade: x-agent") {
			t.Errorf("%s: the upgraded connection's material reached the consumer:\n%s", name, out)
		}
	}
	if rep := <-reports; rep.Status != 502 || rep.Problem != "urn:agui-relay:upstream-upgrade" {
		t.Errorf("the run's report: status %d, problem %q; want 502 upstream-upgrade", rep.Status, rep.Problem)
	}

	// A consumer asking for an upgrade: the producer sees an ordinary
	// request, and its ordinary response is the consumer's.
	out := rawExchange(t, addr, "GET /plain HTTP/1.1\r\nHost: relay\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	if statusOf(out) != 200 || !strings.HasSuffix(out, "plain") {
		t.Errorf("an upgrade request: want the producer's 200, got:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range upgrades {
		if u != "" {
			t.Errorf("the producer was asked for an upgrade: Upgrade: %s", u)
		}
	}
}
