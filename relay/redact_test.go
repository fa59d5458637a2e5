package relay

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A token in the query of a run's URL (an agent's "?api_key=") goes to the
// producer but into no log line: the lines name the upstream without it.
func TestLogLinesLeaveTheQueryOut(t *testing.T) {
	const secret = "s3cret-token"
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") != secret {
			http.Error(w, "the query did not reach the producer", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/fails" {
			http.Error(w, "no", http.StatusBadGateway)
			return
		}
		testkit.StreamHeaders(w)
		// No terminal event: the relay warns, naming the upstream.
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}`+"\n\n", "data: not json\n\n")
	}, nil)

	body := testkit.ReadAll(t, h.post("/run?api_key="+secret, testkit.MinimalInput))
	if !strings.Contains(body, "RUN_STARTED") {
		t.Fatalf("the run did not stream: %q", body)
	}
	rep := h.report()
	if !strings.Contains(rep.URL, secret) {
		t.Errorf("RunReport.URL = %q, want where the run was sent, query and all", rep.URL)
	}
	resp := h.post("/fails?api_key="+secret, "not a run", "Content-Type", "text/plain")
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("proxied request: status %d, want the producer's 502", resp.StatusCode)
	}
	h.producer.Close() // the next run cannot reach it: refused, naming the upstream
	resp = h.post("/run?api_key="+secret, testkit.MinimalInput)
	resp.Body.Close()
	h.report()

	var named int
	for _, e := range h.logs.All() {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, secret) {
			t.Errorf("a log line carries the query's token: %s", line)
		}
		if u, ok := e.ContextMap()["upstream"].(string); ok {
			named++
			if !strings.HasSuffix(u, "/run?redacted") {
				t.Errorf("line %q names the upstream %q, want it without its query, marked ?redacted", e.Message, u)
			}
		}
	}
	if named < 3 { // the warning, the run's line, the refusal
		t.Errorf("%d lines named the upstream, want at least 3: %v", named, h.logs.All())
	}
}
