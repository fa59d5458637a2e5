package cli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// noFileEnv, in the environment of this test binary, makes
// TestServeOutlivesTheDescriptorLimit the relay itself: its soft
// RLIMIT_NOFILE lowered to the value, it runs the command line after "--".
const noFileEnv = "AGUI_RELAY_TEST_NOFILE"

// The process's descriptors (ulimit -n) used up by idle connections: the
// relay backs off and goes on accepting, where fasthttp's Serve returned
// "accept4: too many open files" and the relay exited 1. A run in flight
// meanwhile finishes, the failures are logged and counted in
// agui_relay_accept_errors_total{reason="emfile"}, and once the idle
// connections are closed a new run completes.
func TestServeOutlivesTheDescriptorLimit(t *testing.T) {
	const limit = 48
	if v := os.Getenv(noFileEnv); v != "" {
		var rl syscall.Rlimit
		err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
		if err == nil {
			rl.Cur, err = strconv.ParseUint(v, 10, 64)
		}
		if err == nil {
			err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lowering RLIMIT_NOFILE:", err)
			os.Exit(3)
		}
		os.Exit(run(flag.Args(), os.Stdin, os.Stdout, os.Stderr))
	}

	release := make(chan struct{})
	producer := heldProducer(release, "held")
	defer producer.Close()
	defer producer.CloseClientConnections()

	cmd := exec.Command(os.Args[0], "-test.run=^TestServeOutlivesTheDescriptorLimit$", "--",
		"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--upstream", producer.URL, "--log-format", "json", "--shutdown-grace", "1s")
	cmd.Dir = "internal/cli" // TestMain goes to the repository's root from there
	cmd.Env = append(os.Environ(), noFileEnv+"="+strconv.Itoa(limit))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 64)
	go func() {
		logs := bufio.NewScanner(stderr)
		for logs.Scan() {
			lines <- logs.Text()
		}
		close(lines)
	}()
	// logLine returns the relay's next log line that contains s; it fails
	// the test if the relay exits first.
	logLine := func(s string) string {
		t.Helper()
		var seen []string
		for line := range lines {
			if strings.Contains(line, s) {
				return line
			}
			seen = append(seen, line)
		}
		t.Fatalf("the relay exited (%v) before logging %q; its log:\n%s", cmd.Wait(), s, strings.Join(seen, "\n"))
		return ""
	}
	var at struct{ Listen, Admin string }
	json.Unmarshal([]byte(logLine("agui-relay listening")), &at)

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // each request on a connection of its own
	post := func(run string) *http.Response {
		t.Helper()
		resp, err := client.Post("http://"+at.Listen+"/agent", "application/json",
			strings.NewReader(`{"threadId":"t","runId":"`+run+`","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	held := bufio.NewReader(post("held").Body)
	if line, err := held.ReadString('\n'); err != nil || !strings.Contains(line, "RUN_STARTED") {
		t.Fatalf("the run in flight: first line %q, %v", line, err)
	}

	// More idle connections than the relay may hold descriptors: those it
	// cannot accept wait in the listen queue. (A refused one: the relay
	// exited, which logLine reports.)
	idle := make([]net.Conn, 0, limit)
	for range limit {
		c, err := net.Dial("tcp", at.Listen)
		if err != nil {
			break
		}
		idle = append(idle, c)
	}
	failure := logLine("accepting connections failed")
	if !strings.Contains(failure, `"reason":"emfile"`) || !strings.Contains(failure, `"errors":1,`) {
		t.Errorf("the first accept failure logged as %s, want reason emfile, 1 error", failure)
	}
	go func() { // keep the relay's log flowing
		for range lines {
		}
	}()

	close(release) // the run in flight finishes while accepts fail
	rest, err := io.ReadAll(held)
	if err != nil || !strings.HasSuffix(string(rest), `{"type":"RUN_FINISHED","threadId":"t","runId":"held"}`+"\n\n") {
		t.Errorf("the run in flight, ended during the failures: %q, %v", rest, err)
	}

	for _, c := range idle {
		c.Close()
	}
	after, err := io.ReadAll(post("after").Body)
	if err != nil || !strings.HasSuffix(string(after), `{"type":"RUN_FINISHED","threadId":"t","runId":"after"}`+"\n\n") {
		t.Errorf("a new run once the idle connections closed: %q, %v", after, err)
	}

	resp, err := client.Get("http://" + at.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^agui_relay_accept_errors_total\{reason="emfile"\} (\d+)$`).FindSubmatch(body)
	if m == nil || string(m[1]) == "0" {
		t.Errorf("agui_relay_accept_errors_total: %q, want emfile failures counted", m)
	}
}
