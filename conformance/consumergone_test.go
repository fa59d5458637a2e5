//go:build integration

package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goneKeepAlive is the relay's --keepalive in TestConsumerGoneBehindProxies:
// the unit its bounds are counted in.
const goneKeepAlive = 500 * time.Millisecond

// startHAProxy runs Debian's HAProxy (conformance/setup.sh installs it) in
// front of upstream (host:port) with the bench's settings (HTTP mode,
// keep-alive on both sides, http-no-delay, client and server timeouts of
// an hour: bench/harness HAProxyConfig), and the lines of options in its
// defaults section, and returns the URL that proxies to it. HAProxy is
// stopped when the test ends.
func startHAProxy(t *testing.T, upstream string, options ...string) string {
	t.Helper()
	bin := os.Getenv("HAPROXY")
	if bin == "" {
		bin = "/usr/sbin/haproxy"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("haproxy is missing (%v): run conformance/setup.sh, which installs Debian's", err)
	}
	listen := freePorts(t, 1)[0]
	var extra strings.Builder
	for _, o := range options {
		extra.WriteString("    " + o + "\n")
	}
	conf := fmt.Sprintf(`global
    nbthread 1
    maxconn 256

defaults
    mode http
    option http-keep-alive
    option http-no-delay
    http-reuse always
    timeout connect 10s
    timeout client 3600s
    timeout server 3600s
    timeout http-request 30s
    timeout http-keep-alive 120s
%s
frontend relay
    bind %s
    default_backend relay

backend relay
    server relay %s
`, extra.String(), listen, upstream)
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", file)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	exited := startProcess(t, cmd, func() {
		if t.Failed() {
			t.Logf("haproxy's output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("haproxy exited before it was ready (%v): %s", cmd.ProcessState, out.String())
		default:
		}
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			return "http://" + listen
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not listen on %s after 15s", listen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cancelledProducer answers every run with RUN_STARTED and then says
// nothing until its request is cancelled, which it reports on the channel
// it returns.
func cancelledProducer(t *testing.T) (*httptest.Server, <-chan time.Time) {
	cancelled := make(chan time.Time, 16)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"thread-gone\",\"runId\":\"run-gone\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		cancelled <- time.Now()
	}))
	t.Cleanup(p.Close)
	return p, cancelled
}

// runAndLeave starts a run at base (a relay, or a proxy in front of one) on
// its own connection, reads the stream up to RUN_STARTED and closes the
// connection. It returns when it closed it.
func runAndLeave(t *testing.T, base string) time.Time {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	body := `{"threadId":"thread-gone","runId":"run-gone","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}`
	fmt.Fprintf(c, "POST /agent HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		c.RemoteAddr(), len(body), body)
	r := bufio.NewReader(c)
	var read strings.Builder
	for !strings.Contains(read.String(), "RUN_STARTED") {
		line, err := r.ReadString('\n')
		read.WriteString(line)
		if err != nil {
			t.Fatalf("reading the stream up to RUN_STARTED: %v; read:\n%s", err, read.String())
		}
	}
	if !strings.HasPrefix(read.String(), "HTTP/1.1 200") {
		t.Fatalf("the run was not answered 200:\n%s", read.String())
	}
	c.Close()
	return time.Now()
}

// runLines returns the relay's log lines of runs.
func runLines(r *Relay) []string {
	var lines []string
	for _, l := range r.Logs() {
		if strings.Contains(l.Raw, `"msg":"run"`) || strings.Contains(l.Raw, `"msg":"run ended by the relay"`) {
			lines = append(lines, l.Raw)
		}
	}
	return lines
}

// TestConsumerGoneBehindProxies: a consumer reads RUN_STARTED of a run
// whose producer then falls silent, and leaves (closes its connection).
// The relay (--keepalive 500ms) must cancel the producer's request and end
// the run as consumer_gone within what docs/operations.md states, plus one
// interval of slack: connected directly at once, behind nginx at once
// (proxy_ignore_client_abort off, its default, closes the relay's side),
// behind HAProxy at the second keep-alive (it keeps the relay's side open
// until a second write to the consumer fails), at once with its option
// abortonclose. Each is measured three times and logged in intervals.
func TestConsumerGoneBehindProxies(t *testing.T) {
	producer, cancelled := cancelledProducer(t)
	relay := startRelay(t, producer.URL, "--keepalive", goneKeepAlive.String())
	host := strings.TrimPrefix(relay.URL, "http://")
	nginx, _ := startNginx(t, relay.URL)
	proxies := []struct {
		name string
		url  string
		// intervals is what docs/operations.md states.
		intervals int
	}{
		{"direct", relay.URL, 0},
		{"nginx", nginx[0], 0},
		{"haproxy", startHAProxy(t, host), 2},
		{"haproxy abortonclose", startHAProxy(t, host, "option abortonclose"), 0},
	}
	const runs = 3
	for _, p := range proxies {
		t.Run(p.name, func(t *testing.T) {
			bound := time.Duration(p.intervals+1) * goneKeepAlive
			for i := 0; i < runs; i++ {
				before := len(runLines(relay))
				left := runAndLeave(t, p.url)
				var at time.Time
				select {
				case at = <-cancelled:
				case <-time.After(bound + 10*goneKeepAlive):
					t.Fatalf("run %d: the producer's request is not cancelled %s after the consumer left", i, bound+10*goneKeepAlive)
				}
				took := at.Sub(left)
				t.Logf("run %d: the producer's request cancelled %s (%.2f intervals) after the consumer left", i, took.Round(time.Microsecond), float64(took)/float64(goneKeepAlive))
				if took > bound {
					t.Errorf("run %d: the relay noticed the consumer gone after %s, want within %s: docs/operations.md says %d intervals of --keepalive, plus one",
						i, took.Round(time.Millisecond), bound, p.intervals)
				}
				// The run's log line is written once its handler returns,
				// just after the cancellation.
				deadline := time.Now().Add(5 * time.Second)
				for len(runLines(relay)) == before && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				lines := runLines(relay)
				if len(lines) != before+1 {
					t.Fatalf("run %d: %d new run log lines, want 1; the relay's log:\n%s", i, len(lines)-before, relay.logs.String())
				}
				var line struct {
					Abort    string
					Duration float64 // seconds
				}
				if err := json.Unmarshal([]byte(lines[before]), &line); err != nil {
					t.Fatalf("run %d: the run's log line: %v: %s", i, err, lines[before])
				}
				// The duration runs from the request, which the consumer
				// left as soon as it read RUN_STARTED.
				if d := time.Duration(line.Duration * float64(time.Second)); line.Abort != "consumer_gone" || d > bound {
					t.Errorf("run %d: the run ended with abort %q after %s, want consumer_gone within %s: %s", i, line.Abort, d, bound, lines[before])
				}
			}
		})
	}
}
