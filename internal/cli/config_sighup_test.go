//go:build unix

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestSIGHUPReloadsRoutesWithoutDroppingRuns runs serve with a routes file,
// opens a long run, rewrites the file and sends the process a real SIGHUP:
// the run in flight finishes on the old upstream while new requests go to
// the new one; then a broken file and another SIGHUP keep the routes in force.
func TestSIGHUPReloadsRoutesWithoutDroppingRuns(t *testing.T) {
	release := make(chan struct{})
	old, nu := namedProducer(t, "old", release), namedProducer(t, "new", release)
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("routes:\n  - name: a\n    prefix: /agents/a\n    upstream: " + old.URL + "\n    stripPrefix: true\n")

	core, logs := observer.New(zapcore.InfoLevel)
	c := flagDefaults(t, "--config", file, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	at := startServeLogged(t, c, zap.New(core))
	base := "http://" + at.relay

	if status, body := getBody(t, base+"/agents/a/caps"); status != 200 || body != "old /caps" {
		t.Fatalf("before the reload: %d %q", status, body)
	}
	if status, _ := getBody(t, base+"/agents/b/caps"); status != 404 {
		t.Errorf("a path of no route: %d, want 404", status)
	}
	resp := postRun(t, base+"/agents/a/run", `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[]}`)
	defer resp.Body.Close()
	var stream strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(stream.String(), "RUN_STARTED") {
		n, err := resp.Body.Read(buf)
		stream.Write(buf[:n])
		if err != nil {
			t.Fatalf("the run ended before RUN_STARTED: %v %q", err, stream.String())
		}
	}

	// The new table: route a moves to the new upstream, route b appears.
	write("routes:\n  - name: a\n    prefix: /agents/a\n    upstream: " + nu.URL + "\n    stripPrefix: true\n" +
		"  - name: b\n    prefix: /agents/b\n    upstream: " + nu.URL + "/b\n    stripPrefix: true\n")
	hup(t)
	testkit.WaitFor(t, "the reload is logged", func() bool { return logs.FilterMessage("routes reloaded").Len() == 1 })
	if status, body := getBody(t, base+"/agents/a/caps"); status != 200 || body != "new /caps" {
		t.Errorf("after the reload, route a: %d %q, want the new upstream", status, body)
	}
	if status, body := getBody(t, base+"/agents/b/caps"); status != 200 || body != "new /b/caps" {
		t.Errorf("after the reload, route b: %d %q", status, body)
	}

	close(release)
	rest, err := io.ReadAll(resp.Body)
	stream.Write(rest)
	if err != nil || !strings.Contains(stream.String(), `"type":"RUN_FINISHED","threadId":"t","runId":"old"`) {
		t.Errorf("the run in flight did not finish on the old upstream: %v %q", err, stream.String())
	}

	// A broken file: the reload fails, logged, and the routes stay.
	write("routes:\n  - name: a\n    prefix: /agents/a\n    upstream: not a url\n")
	hup(t)
	testkit.WaitFor(t, "the failed reload is logged", func() bool {
		return logs.FilterMessage("reloading the routes failed; the routes in force stay").Len() == 1
	})
	entry := logs.FilterMessage("reloading the routes failed; the routes in force stay").All()[0]
	if e := fmt.Sprint(entry.ContextMap()["error"]); !strings.Contains(e, `routes[0] "a": upstream: "not a url"`) {
		t.Errorf("the failed reload's error: %q", e)
	}
	if status, body := getBody(t, base+"/agents/b/caps"); status != 200 || body != "new /b/caps" {
		t.Errorf("after a failed reload, route b: %d %q, want the routes in force kept", status, body)
	}
}

func hup(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}
