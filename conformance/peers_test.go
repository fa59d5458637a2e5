//go:build integration

package conformance

// Issue 39's items 4 and 5 against real producers: servers with a body
// limit that respond 413 to the header of a large body (nginx as a
// producer's gateway, Go's net/http, Python's http.server), and Python's
// http.server with do_HEAD = do_GET, which answers a HEAD with a body. The
// relay's own tests use hand-written peers (relay/earlyresponse_test.go,
// relay/reuse_test.go).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// peerContext is a context that ends a little before the test's deadline,
// so that a relay that waits for its --first-byte-timeout fails the test
// with what it responded instead of go test's panic.
func peerContext(t *testing.T) context.Context {
	d, ok := t.Deadline()
	if !ok {
		return context.Background()
	}
	ctx, cancel := context.WithDeadline(context.Background(), d.Add(-5*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// postRun sends a run whose input is input to url and returns the status
// and the whole response body.
func postRun(ctx context.Context, client *http.Client, url, input string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(input))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, string(body), err
}

// runInput is a 1.0 RunAgentInput whose user message is size bytes of x.
func runInput(runID string, size int) string {
	return `{"threadId":"t-peers","runId":"` + runID + `","protocolVersion":"1.0","messages":[{"id":"m1","role":"user","content":"` +
		strings.Repeat("x", size) + `"}],"tools":[],"context":[],"forwardedProps":{}}`
}

// accessLogLine is one line of runNginx's access log: nginx's connection
// serial number, the status and the method.
type accessLogLine struct {
	conn, status, method string
}

// accessLog reads runNginx's access log in dir.
func accessLog(t *testing.T, dir string) []accessLogLine {
	var lines []accessLogLine
	for _, l := range strings.Split(strings.TrimSpace(readLog(t, filepath.Join(dir, "access.log"))), "\n") {
		if f := strings.Fields(l); len(f) >= 4 {
			lines = append(lines, accessLogLine{conn: f[0], status: f[2], method: f[3]})
		}
	}
	return lines
}

// goBodyLimitProducer is a producer on Go's net/http server behind
// http.MaxBytesHandler (1 MiB): a larger body gets 413 once the limit is
// read, and the server closes the connection without reading the rest (a
// reset for the bytes left unread); a smaller one gets the run's events.
func goBodyLimitProducer(t *testing.T) string {
	p := httptest.NewServer(http.MaxBytesHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ ThreadID, RunID string }
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		_ = json.Unmarshal(b, &in)
		ids := fmt.Sprintf(`"threadId":%q,"runId":%q`, in.ThreadID, in.RunID)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",%s}\n\ndata: {\"type\":\"RUN_FINISHED\",%s}\n\n", ids, ids)
	}), 1<<20))
	t.Cleanup(p.Close)
	return p.URL
}

// TestBodyLimitResponsesReachTheConsumer: the relay in front of producers
// with a 1 MiB body limit, each a real server: nginx as the producer's
// gateway (client_max_body_size 1m, proxying to a producer), Go's net/http
// server with http.MaxBytesHandler, and Python's http.server refusing a
// Content-Length over the limit with send_error(413). A run whose
// RunAgentInput is 20 MB gets the producer's 413 through the relay long
// before the relay's --first-byte-timeout (2m), and a small run through
// the same relay right after gets 200. nginx responds at once and reads
// and discards the body after its 413 (its lingering close); Go and Python
// close the connection with the body unread, where the relay of issue 39
// responded 502. nginx's access log shows the run after the 413 on a
// connection of its own.
func TestBodyLimitResponsesReachTheConsumer(t *testing.T) {
	ports := freePorts(t, 1)
	dir := runNginx(t, ports, fmt.Sprintf(`
  server {
    listen %s;
    client_max_body_size 1m;
    location / {
      proxy_pass %s;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }`, ports[0], silentProducerFor(t, 0).URL))
	peers := []struct{ name, url, page string }{
		{"nginx", "http://" + ports[0], "413 Request Entity Too Large"},
		{"go-net-http", goBodyLimitProducer(t), "body over 1 MiB"},
		{"python-http-server", startHTTPServerProducer(t), "Error code: 413"},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			relay := startRelay(t, p.url, "--first-byte-timeout", "2m")
			ctx := peerContext(t)
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			status, body, err := postRun(ctx, client, relay.URL+"/agent", runInput("r-large", 20<<20))
			if err != nil || status != http.StatusRequestEntityTooLarge || !strings.Contains(body, p.page) {
				t.Fatalf("the 20 MB run got %d %.300q (%v), want the producer's 413 with %q; the relay's log:\n%s", status, body, err, p.page, relay.logs.String())
			}
			status, body, err = postRun(ctx, client, relay.URL+"/agent", runInput("r-small", 16))
			if err != nil || status != http.StatusOK || !strings.Contains(body, "RUN_FINISHED") {
				t.Fatalf("the small run after the 413 got %d %.300q (%v), want 200 and its events; the relay's log:\n%s", status, body, err, relay.logs.String())
			}
		})
	}
	// nginx logs a request once it has responded: the 413 by the time the
	// relay relays it, the 200 once its run has ended.
	var large, small []string // nginx's connection of each
	for _, l := range accessLog(t, dir) {
		switch {
		case l.method == http.MethodPost && l.status == "413":
			large = append(large, l.conn)
		case l.method == http.MethodPost && l.status == "200":
			small = append(small, l.conn)
		}
	}
	if len(large) != 1 || len(small) != 1 || large[0] == small[0] {
		t.Errorf("nginx's access log has the 413 on connections %v and the run after it on %v: want one each, on two connections\n%s", large, small, readLog(t, filepath.Join(dir, "access.log")))
	}
}

// startHTTPServerProducer runs testdata/http_server_producer.py (Python's
// http.server with do_HEAD = do_GET and a body limit) and returns its URL.
func startHTTPServerProducer(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH (%v): this test runs Python's http.server, the producer issue 39 names; install python3", err)
	}
	cmd := exec.Command(python, filepath.Join(confDir, "testdata", "http_server_producer.py"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	startProcess(t, cmd, func() {
		// Its stderr holds a traceback for each response whose
		// connection the relay closed first (a HEAD's body): the last few.
		if e := stderr.String(); t.Failed() && e != "" {
			t.Logf("http_server_producer.py's stderr (the end):\n%s", e[max(0, len(e)-4000):])
		}
	})
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		port <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout) //nolint:errcheck
	}()
	select {
	case p := <-port:
		if p == "" {
			t.Fatalf("http_server_producer.py printed no port; its stderr:\n%s", stderr.String())
		}
		return "http://127.0.0.1:" + p
	case <-time.After(15 * time.Second):
		t.Fatalf("http_server_producer.py printed no port after 15s; its stderr:\n%s", stderr.String())
	}
	return ""
}

// TestHeadAnsweredWithABodyByPythonHTTPServer: a real Python http.server
// whose do_HEAD is its do_GET sends a body after each HEAD's response
// header. Four consumers each send 75 HEAD and GET pairs through the relay
// with the default --upstream-reuse always: every HEAD gets 200 and every
// GET its own body, never a 502 (the relay of issue 39 read a HEAD's body
// as the next request's response: 60 of 1,832 GETs got 502).
func TestHeadAnsweredWithABodyByPythonHTTPServer(t *testing.T) {
	relay := startRelay(t, startHTTPServerProducer(t))
	const consumers, pairs = 4, 75
	ctx := peerContext(t)
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	fail := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, s)
	}
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			for n := range pairs {
				path := fmt.Sprintf("/c%d/%d", c, n)
				for _, method := range []string{http.MethodHead, http.MethodGet} {
					req, err := http.NewRequestWithContext(ctx, method, relay.URL+path, nil)
					if err != nil {
						fail(err.Error())
						return
					}
					res, err := client.Do(req)
					if err != nil {
						fail(fmt.Sprintf("%s %s: %v", method, path, err))
						continue
					}
					body, err := io.ReadAll(res.Body)
					res.Body.Close()
					want := ""
					if method == http.MethodGet {
						want = strings.Repeat("body of "+path+"\n", 8)
					}
					if err != nil || res.StatusCode != http.StatusOK || string(body) != want {
						fail(fmt.Sprintf("%s %s: %d %.120q (%v)", method, path, res.StatusCode, body, err))
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of %d requests did not get 200 and their own body, e.g.:\n%s", len(failures), 2*consumers*pairs, strings.Join(failures[:min(len(failures), 10)], "\n"))
	}
}
