package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/demo"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/relay"
)

func TestServeFlagsReadTheEnvironment(t *testing.T) {
	env := map[string]string{
		"AGUI_RELAY_LISTEN":                     "127.0.0.1:1111",
		"AGUI_RELAY_UPSTREAM":                   "http://agent.internal:8000/api",
		"AGUI_RELAY_PRODUCER_VERSION":           "0.0.45",
		"AGUI_RELAY_CONSUMER_VERSION":           "1.0",
		"AGUI_RELAY_QUIET_TRANSLATION_WARNINGS": "true",
		"AGUI_RELAY_MAX_BODY":                   "1MiB",
		"AGUI_RELAY_MAX_BODIES_IN_FLIGHT":       "3MiB",
		"AGUI_RELAY_MAX_FRAME":                  "2048",
		"AGUI_RELAY_IDLE_TIMEOUT":               "90s",
		"AGUI_RELAY_CONSUMER_STALL_TIMEOUT":     "20s",
		"AGUI_RELAY_KEEPALIVE":                  "5s",
		"AGUI_RELAY_BODY_TIMEOUT":               "7s",
		"AGUI_RELAY_LOG_FORMAT":                 "console",
	}
	c, err := parseServe([]string{"--listen", "127.0.0.1:2222"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.listen != "127.0.0.1:2222" {
		t.Errorf("listen %q: the command line must win", c.listen)
	}
	if c.upstream != "http://agent.internal:8000/api" || c.producerVersion.String() != "0.0.45" || c.consumerVersion.String() != "1.0" ||
		!c.quietWarnings || c.maxBody != 1<<20 || c.maxBodiesInFlight != 3<<20 || c.maxFrame != 2048 || c.idleTimeout != 90*time.Second || c.logFormat != "console" ||
		c.consumerStallTimeout != 20*time.Second || c.keepAlive != 5*time.Second || c.bodyTimeout != 7*time.Second {
		t.Errorf("config %+v", c)
	}
	// Defaults, per the contract.
	c, err = parseServe(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.listen != "127.0.0.1:8080" || c.adminListen != "127.0.0.1:9090" || c.upstream != "" || c.maxBody != 64<<20 || c.maxBodiesInFlight != 256<<20 ||
		c.maxFrame != 10<<20 || c.shutdownGrace != 30*time.Second || c.logFormat != "json" || c.logLevel != "info" ||
		c.consumerStallTimeout != time.Minute || c.keepAlive != 15*time.Second || c.bodyTimeout != time.Minute {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range [][]string{{"--upstream", "agent:8000"}, {"--producer-version", "1.0.0"}, {"--max-body", "-1"}, {"--log-format", "xml"},
		{"--max-bodies-in-flight", "1MiB", "--max-body", "2MiB"}, {"--max-bodies-in-flight", "-1"}} {
		if _, err := parseServe(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseServe(nil, func(k string) string {
		if k == "AGUI_RELAY_MAX_FRAME" {
			return "lots"
		}
		return ""
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "AGUI_RELAY_MAX_FRAME") {
		t.Errorf("bad environment value: %v", err)
	}
}

func TestServeHelpDocumentsDefaults(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"serve", "--help"}, nil, &out, io.Discard); code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"AGUI_RELAY_", "-listen", `default "127.0.0.1:8080"`, "-idle-timeout", "default 5m0s", "-max-body", "64MiB", "-max-bodies-in-flight", "256MiB", "-shutdown-grace", "default 30s",
		"-consumer-version", "(default auto)", "read as 0.0.59", "-consumer-stall-timeout", "default 1m0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// startServe runs serve with the embedded demo agent on free ports.
func startServe(t *testing.T, configure func(*serveConfig)) (listening, context.CancelFunc, <-chan error) {
	t.Helper()
	c, err := parseServe([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--demo-pace", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if configure != nil {
		configure(c)
	}
	recordings := demo.Recordings()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan listening, 1)
	done := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		done <- serve(ctx, c, zap.NewNop(), recordings, func(l listening) { up <- l })
		close(ended)
	}()
	select {
	case at := <-up:
		t.Cleanup(func() {
			// Connections kept alive after a run are the server's again;
			// a fresh one counts as busy for its first 5 s, so the tests'
			// client lets go of them before the shutdown.
			http.DefaultClient.CloseIdleConnections()
			cancel()
			<-ended
		})
		return at, cancel, done
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return listening{}, nil, nil
}

func postRun(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// eventTypes returns the types of the events of an SSE stream.
func eventTypes(t *testing.T, stream string) []string {
	t.Helper()
	var types []string
	for _, line := range strings.Split(stream, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev struct{ Type string }
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			types = append(types, ev.Type)
		}
	}
	return types
}

func TestServeRelaysTheDemoAgent(t *testing.T) {
	at, _, _ := startServe(t, nil)
	resp := postRun(t, "http://"+at.relay+"/agent", `{"threadId":"th\"1","runId":"run-1","protocolVersion":"1.0","messages":[]}`)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %v, headers %v", resp.StatusCode, err, resp.Header)
	}
	stream := string(b)
	want := "RUN_STARTED REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT REASONING_MESSAGE_CONTENT REASONING_MESSAGE_END REASONING_END " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
		"STATE_SNAPSHOT STATE_DELTA RUN_FINISHED"
	if got := strings.Join(eventTypes(t, stream), " "); got != want {
		t.Errorf("events %s", got)
	}
	if !strings.Contains(stream, `"threadId":"th\"1","runId":"run-1"`) {
		t.Errorf("the run's ids are not in the stream: %q", stream[:200])
	}
	// Non-POST requests are proxied to the agent.
	resp, err = http.Get("http://" + at.relay + "/agent/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"versions":["0.0.40","1.0"]`) {
		t.Errorf("capabilities: %d %s", resp.StatusCode, b)
	}
	// A run posted to another path than the demo's reaches a 404 that says
	// which paths exist and how --upstream joins them.
	for _, path := range []string{"/whatever", "/agent/agent"} {
		resp := postRun(t, "http://"+at.relay+path, `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "the demo agent answers POST /agent (a run) and GET /agent/capabilities") ||
			!strings.Contains(string(b), "--upstream's base URL") {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/deprecations": 200, "/other": 404, "/debug/pprof/": 404} {
		resp, err := http.Get("http://" + at.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// On shutdown, runs in flight get the grace period, then end with a
// RUN_ERROR; readiness turns false at once.
func TestServeShutdownEndsOpenRunsAfterGrace(t *testing.T) {
	at, cancel, done := startServe(t, func(c *serveConfig) {
		c.demoPace = 2 * time.Second // the demo agent pauses after its first event
		c.shutdownGrace = 50 * time.Millisecond
	})
	resp := postRun(t, "http://"+at.relay+"/agent", `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for { // wait for the first event: the run is streaming
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "RUN_STARTED") {
			break
		}
	}
	if pollerLoops() == 0 {
		t.Fatal("serve runs no poller")
	}
	t0 := time.Now()
	cancel()
	rest, err := io.ReadAll(br)
	t.Logf("stream ended %v after cancel", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), `{"type":"RUN_ERROR","message":"agui-relay: the relay is shutting down","code":"`+relay.CodeShutdown+`"}`) {
		t.Errorf("after shutdown: %q", rest)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	t.Logf("serve returned %v after cancel", time.Since(t0))
	if n := pollerLoops(); n != 0 {
		t.Errorf("%d poller goroutines left after serve returned", n)
	}
}

// pollerLoops counts the goroutines of running wire.Pollers.
func pollerLoops() int {
	return testkit.GoroutinesIn("wire.(*Poller).loop(")
}

// Profiles are served only when asked for: a heap profile shows memory.
func TestServePprofOnlyWhenAsked(t *testing.T) {
	at, _, _ := startServe(t, func(c *serveConfig) { c.pprof = true })
	for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/goroutine?debug=1": "goroutine profile:"} {
		resp, err := http.Get("http://" + at.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %.200s", path, resp.StatusCode, b)
		}
	}
}

// --max-bodies-in-flight reaches the server: with room for one body of
// --max-body, a second one, while the first is on its way, is refused with
// 503 and Retry-After before it is read.
func TestServeBoundsBodiesInFlight(t *testing.T) {
	at, _, _ := startServe(t, func(c *serveConfig) {
		c.maxBody, c.maxBodiesInFlight = 4<<10, 4<<10
	})
	first := testkit.DialConsumer(t, at.relay)
	io.WriteString(first, "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
	// The first body's claim is made once its header is read; until then the
	// second may be the one that holds the budget: either is refused.
	second := testkit.DialConsumer(t, at.relay)
	io.WriteString(second, "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
	refused := make(chan *http.Response, 2)
	for _, c := range []net.Conn{first, second} {
		go func() {
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				refused <- resp
			}
		}()
	}
	resp := testkit.Await(t, refused, "neither body refused")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// A request body that stops arriving is cut at --body-timeout: 408, the
// problem naming the flag, and the connection closed.
func TestServeCutsAStalledBodyAtBodyTimeout(t *testing.T) {
	at, _, _ := startServe(t, func(c *serveConfig) { c.bodyTimeout = 200 * time.Millisecond })
	c := testkit.DialConsumer(t, at.relay)
	io.WriteString(c, "POST /agent HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || !strings.Contains(string(b), "200ms (--body-timeout)") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the connection stayed open (%q, %v)", n, err)
	}
}

// An address taken already fails serve with the flag that named it (with
// the demo agent or an upstream).
func TestServeNamesTheFlagOfATakenAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, args := range [][]string{{"--listen", addr}, {"--admin-listen", addr}, {"--upstream", "http://127.0.0.1:1", "--listen", addr}} {
		flag := args[len(args)-2]
		args = append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, args...)
		c, err := parseServe(args, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		err = serve(context.Background(), c, zap.NewNop(), nil, nil)
		if err == nil || !strings.HasPrefix(err.Error(), flag+" "+addr+": ") {
			t.Errorf("%s %s taken: serve: %v", flag, addr, err)
		}
	}
}

// A producer that sends bytes after its response (an unsolicited response)
// has the connection discarded, and serve counts it on /metrics under the
// route.
func TestServeCountsUnsolicitedProducerBytes(t *testing.T) {
	const unsolicited = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE"
	producer := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"+unsolicited) //nolint:errcheck
	})
	at, _, _ := startServe(t, func(c *serveConfig) { c.upstream = producer })
	resp, err := http.Get("http://" + at.relay + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("proxied GET read %q", b)
	}
	const want = `agui_relay_upstream_stray_discards_total{route="default"} 1`
	var metrics string
	testkit.WaitFor(t, "the discard counted", func() bool {
		resp, err := http.Get("http://" + at.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
		return strings.Contains(metrics, want)
	}, func() string { return metrics })
}
