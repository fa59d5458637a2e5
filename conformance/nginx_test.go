//go:build integration

package conformance

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// nginxSilence is how long the producer of TestKeepAlivesThroughNginx falls
// silent mid-run: well over nginx's proxy_read_timeout there (3s).
const nginxSilence = 8 * time.Second

// startNginx runs Debian's nginx (conformance/setup.sh installs it) in
// front of each upstream, as a UI's deployment puts it in front of the
// relay: proxy_read_timeout 3s, no buffering. It returns the URL that
// proxies to each and the path of nginx's error log, and stops nginx when
// the test ends.
func startNginx(t *testing.T, upstreams ...string) (urls []string, errorLog string) {
	t.Helper()
	ports := freePorts(t, len(upstreams))
	var servers strings.Builder
	urls = make([]string, len(upstreams))
	for i, up := range upstreams {
		fmt.Fprintf(&servers, `
  server {
    listen %s;
    location / {
      proxy_pass %s;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 3s;
    }
  }`, ports[i], up)
		urls[i] = "http://" + ports[i]
	}
	dir := runNginx(t, ports, servers.String())
	return urls, filepath.Join(dir, "error.log")
}

// runNginx runs Debian's nginx with the http block's server blocks
// servers, which listen on ports, until the test ends. It returns nginx's
// directory: error.log, and access.log in the format "$connection
// $connection_requests $status $request_method $request_uri".
func runNginx(t *testing.T, ports []string, servers string) (dir string) {
	t.Helper()
	bin := os.Getenv("NGINX")
	if bin == "" {
		bin = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("nginx is missing (%v): run conformance/setup.sh, which installs Debian's", err)
	}
	dir = t.TempDir()
	conf := fmt.Sprintf(`master_process off;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
  log_format conns '$connection $connection_requests $status $request_method $request_uri';
  access_log %[1]s/access.log conns;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
%[2]s
}
`, dir, servers)
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", file, "-p", dir)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	exited := startProcess(t, cmd, func() {
		if t.Failed() {
			t.Logf("nginx's error log:\n%s", readLog(t, filepath.Join(dir, "error.log")))
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for _, p := range ports {
		for {
			select {
			case <-exited:
				log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
				t.Fatalf("nginx exited before it was ready (%v): %s\n%s", cmd.ProcessState, out.String(), log)
			default:
			}
			if c, err := net.Dial("tcp", p); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("nginx does not listen on %s after 15s", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return dir
}

// readLog returns the log file at path.
func readLog(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

// TestKeepAlivesThroughNginx: a real nginx in front of the relay with
// proxy_read_timeout 3s, and a producer that falls silent for 8s in the
// middle of a run. Without keep-alives (--keepalive 0) nginx cuts the
// stream and the UI's run does not complete; with them (--keepalive 1s)
// it completes, with @ag-ui/client 1.0.0 and 0.0.59 and with CopilotKit
// 1.75's runtime (its HttpAgent reading nginx, CopilotKitCore in front).
func TestKeepAlivesThroughNginx(t *testing.T) {
	requireSetup(t)
	producer := silentProducerFor(t, nginxSilence)
	with := startRelay(t, producer.URL, "--keepalive", "1s")
	without := startRelay(t, producer.URL, "--keepalive", "0")
	proxied, errorLog := startNginx(t, with.URL, without.URL)
	consumers := []string{"1.0.0", "0.0.59", "copilotkit-1.75"}
	outs := map[string]Outcome{}
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for _, c := range consumers {
			for i, mode := range []string{"keepalive", "none"} {
				t.Run(c+" "+mode, func(t *testing.T) {
					t.Parallel()
					relay := &Relay{URL: proxied[i]}
					kc := keepAliveCase(relay, c)
					kc.TimeoutMs = 30000
					script, args := "runner.js", []string{c}
					if c == "copilotkit-1.75" {
						script, args = "copilotkit.js", nil
					}
					var o Outcome
					res, err := tryScript(t, script, args, []Case{kc})
					switch {
					case err == nil:
						o = res[0]
					case mode == "keepalive":
						t.Fatal(err)
					default:
						// Cut: the client threw out of its run (undici's
						// "terminated"), which ends the driver.
						o = Outcome{Error: err.Error()}
					}
					mu.Lock()
					outs[c+" "+mode] = o
					mu.Unlock()
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	for _, c := range consumers {
		o := outs[c+" keepalive"]
		var reasons []string
		if !o.Resolved || len(o.RunErrors) > 0 || !strings.Contains(fmt.Sprint(o.Messages), keepAliveText) {
			reasons = append(reasons, fmt.Sprintf("the run did not complete through nginx: resolved %v, error %q, run errors %s", o.Resolved, o.Error, short(o.RunErrors)))
		}
		reportVia(t, c, "keepalive-silence-8s", "nginx", reasons)
		// The control: the same consumer without keep-alives is cut.
		o = outs[c+" none"]
		reasons = nil
		if o.Resolved && len(o.RunErrors) == 0 && strings.Contains(fmt.Sprint(o.Messages), keepAliveText) {
			reasons = append(reasons, "the run completed through nginx without keep-alives: the premise of this test (nginx cuts a stream silent for 8s) no longer holds")
		}
		reportVia(t, c, "keepalive-silence-8s", "nginx-without-keepalives-control", reasons)
	}
	// nginx cut exactly the runs without keep-alives, at its read timeout.
	if n := strings.Count(readLog(t, errorLog), "upstream timed out"); n != len(consumers) {
		t.Errorf("nginx timed %d runs out, want the %d without keep-alives", n, len(consumers))
	}
	if n := keepAlivesWritten(t, with); n < len(consumers)*(int(nginxSilence/time.Second)-2) {
		t.Errorf("the relay wrote %d keep-alives, want about %d per run", n, int(nginxSilence/time.Second))
	}
}
