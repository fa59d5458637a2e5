package harness

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/synth"
)

// Proxy is a kind of process the workload goes through.
type Proxy string

// The proxies under test.
const (
	ProxyNone     Proxy = "direct"
	ProxyRelay    Proxy = "agui-relay"
	ProxyNginx    Proxy = "nginx"
	ProxyHTTPUtil Proxy = "httputil"
	ProxyNaive    Proxy = "naive"
	ProxyTCPCopy  Proxy = "tcpcopy"
	// ProxyFastHTTP is fasthttp's server and HostClient streaming each
	// answer through (bench/cmd/fasthttpproxy): the floor of the relay's
	// own dependencies.
	ProxyFastHTTP Proxy = "fasthttp"
	ProxyHAProxy  Proxy = "haproxy"
	ProxyCaddy    Proxy = "caddy"
	// ProxyCopilotKit is the CopilotKit runtime (bench/copilotkit), a
	// Node process; its route is fixed, so a run's parameters travel in
	// the input (Proc.ParamsInInput).
	ProxyCopilotKit Proxy = "copilotkit"
)

// Case is one row of the comparison: a workload through a proxy.
type Case struct {
	Name    string
	Proxy   Proxy
	Dialect synth.Dialect
	// Mix leaves blocks out of the case's runs (a proxy that cannot read
	// some shapes).
	Mix synth.Mix
	// Args are extra arguments for the proxy (relay versions, naive mode).
	Args []string
	// Exact asks the checker for the exact event count: true when nothing
	// translates the stream.
	Exact bool
	// Baseline names the direct case with the same workload.
	Baseline string
	// Env is added to the proxy's environment (GOMAXPROCS=1).
	Env []string
}

// Binaries are the programs the cases run.
type Binaries struct {
	Relay, HTTPUtil, Naive, TCPCopy, FastHTTP, Nginx, HAProxy, Caddy string
	// Node runs CopilotKit, the script bench/copilotkit/runtime.js.
	Node, CopilotKit string
	// RelayArgs go to every agui-relay serve.
	RelayArgs []string
	// Pin, when set, is the CPU list the proxies run on (taskset -c).
	Pin string
}

// Proc is a running proxy.
type Proc struct {
	Addr  string
	Admin string
	// RunPath, when set, is the path every run is posted to; the run's
	// parameters then go in the input's forwardedProps
	// (synth.BodyParamsKey) rather than in the query.
	RunPath string
	Pid     int
	cmd     *exec.Cmd
	dir     string
	log     *os.File
	Label   string // version and settings, for the report
}

// FreePorts returns n loopback addresses that were free a moment ago, all
// different: each is held until all are found (one freed at once may be
// handed out again by the next).
func FreePorts(n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs, nil
}

// StartProxy runs c's proxy in front of upstream (host:port). For
// ProxyNone it returns upstream itself with no process.
func StartProxy(c Case, bin Binaries, upstream, workDir string) (*Proc, error) {
	if c.Proxy == ProxyNone {
		return &Proc{Addr: upstream}, nil
	}
	ports, err := FreePorts(2) // the proxy's and, for agui-relay, its admin address
	if err != nil {
		return nil, err
	}
	addr := ports[0]
	dir, err := os.MkdirTemp(workDir, string(c.Proxy)+"-")
	if err != nil {
		return nil, err
	}
	p := &Proc{Addr: addr, dir: dir}
	var cmd *exec.Cmd
	switch c.Proxy {
	case ProxyRelay:
		p.Admin = ports[1]
		// The bench's consumer declares no protocolVersion (Input): read as
		// current, unless a case names its release (with the relay's
		// default, auto, it would be read as 0.0.59 and every 1.0 stream
		// downgraded).
		args := append([]string{"serve", "--listen", addr, "--admin-listen", p.Admin,
			"--upstream", "http://" + upstream, "--log-level", "error", "--consumer-version", "1.0"}, bin.RelayArgs...)
		args = append(args, c.Args...)
		cmd = exec.Command(bin.Relay, args...)
	case ProxyHTTPUtil:
		cmd = exec.Command(bin.HTTPUtil, "--listen", addr, "--upstream", "http://"+upstream)
	case ProxyNaive:
		cmd = exec.Command(bin.Naive, append([]string{"--listen", addr, "--upstream", "http://" + upstream}, c.Args...)...)
	case ProxyTCPCopy:
		cmd = exec.Command(bin.TCPCopy, "--listen", addr, "--upstream", "http://"+upstream)
	case ProxyFastHTTP:
		cmd = exec.Command(bin.FastHTTP, "--listen", addr, "--upstream", "http://"+upstream)
	case ProxyHAProxy:
		conf := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(conf, []byte(HAProxyConfig(addr, upstream, FileLimit())), 0o644); err != nil {
			return nil, err
		}
		// -db: in the foreground, as a child of the bench.
		cmd = exec.Command(bin.HAProxy, "-db", "-f", conf)
	case ProxyCaddy:
		conf := filepath.Join(dir, "caddy.json")
		if err := os.WriteFile(conf, []byte(CaddyConfig(addr, upstream)), 0o644); err != nil {
			return nil, err
		}
		cmd = exec.Command(bin.Caddy, "run", "--config", conf)
		// Caddy keeps its state under the user's directories: here, the
		// case's own.
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	case ProxyCopilotKit:
		p.RunPath = CopilotKitRunPath
		cmd = exec.Command(bin.Node, bin.CopilotKit, addr, upstream)
	case ProxyNginx:
		conf := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(conf, []byte(NginxConfig(dir, addr, upstream, FileLimit())), 0o644); err != nil {
			return nil, err
		}
		cmd = exec.Command(bin.Nginx, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	default:
		return nil, fmt.Errorf("unknown proxy %q", c.Proxy)
	}
	if bin.Pin != "" {
		cmd = exec.Command("taskset", append([]string{"-c", bin.Pin, cmd.Path}, cmd.Args[1:]...)...)
	}
	p.log, err = os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if extra := os.Getenv("AGUIBENCH_PROXY_ENV"); extra != "" && goProxy(c.Proxy) {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, strings.Fields(extra)...)
	}
	if len(c.Env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, c.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmd, p.Pid = cmd, cmd.Process.Pid
	if err := p.waitReady(15 * time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s did not become ready: %v; log: %s", c.Proxy, err, p.Log())
	}
	return p, nil
}

func (p *Proc) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	exited := make(chan struct{})
	go func() {
		// Only notice an early exit; Stop reaps the process.
		for time.Now().Before(deadline) {
			if err := syscall.Kill(p.Pid, 0); err != nil {
				close(exited)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for {
		select {
		case <-exited:
			return fmt.Errorf("exited")
		default:
		}
		if p.ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *Proc) ready() bool {
	if p.Admin != "" {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + p.Admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	c, err := net.DialTimeout("tcp", p.Addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Log returns the tail of the proxy's stderr.
func (p *Proc) Log() string {
	if p.dir == "" {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(p.dir, "stderr.log"))
	e, _ := os.ReadFile(filepath.Join(p.dir, "error.log"))
	b = append(b, e...)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Sample reads the proxy's process tree; zero for direct.
func (p *Proc) Sample() ProcSample {
	if p == nil || p.Pid == 0 {
		return ProcSample{}
	}
	s, _ := SampleTree(p.Pid)
	return s
}

// Stop ends the proxy (SIGTERM, then SIGKILL after 5 s) and removes its
// directory unless keep.
func (p *Proc) Stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
	if p.log != nil {
		p.log.Close()
	}
}

// goProxy reports whether p is written in Go (AGUIBENCH_PROXY_ENV applies).
func goProxy(p Proxy) bool {
	switch p {
	case ProxyNginx, ProxyHAProxy, ProxyCopilotKit, ProxyNone:
		return false
	}
	return true
}

// CopilotKitRunPath is where the CopilotKit runtime (bench/copilotkit)
// takes a run of its one agent: its node listener's base path, then
// agent/<id>/run.
const CopilotKitRunPath = "/api/copilotkit/agent/default/run"

// HAProxyConfig is the HAProxy configuration the bench runs: one thread
// (as nginx runs one worker), HTTP mode so that it parses what it
// forwards as nginx does, keep-alive on both sides with idle producer
// connections reused by any request (http-reuse always) and kept two
// minutes, no request buffering (option http-buffer-request stays off;
// HAProxy never buffers a response beyond what one read brings),
// http-no-delay so that each part of a response is sent as it arrives
// rather than held for more, and timeouts long enough for idle streams.
func HAProxyConfig(listen, upstream string, files uint64) string {
	conns := uint64(1000)
	if files > 400 {
		conns = (files - 200) / 2 // two sockets per stream
	}
	r := strings.NewReplacer("LISTEN", listen, "UPSTREAM", upstream, "CONNS", strconv.FormatUint(conns, 10))
	return r.Replace(`global
    nbthread 1
    maxconn CONNS
    tune.bufsize 16384

defaults
    mode http
    option http-keep-alive
    option http-no-delay
    http-reuse always
    maxconn CONNS
    timeout connect 10s
    timeout client 3600s
    timeout server 3600s
    timeout http-request 30s
    timeout http-keep-alive 120s

frontend bench
    bind LISTEN backlog 4096
    default_backend producer

backend producer
    server producer UPSTREAM pool-purge-delay 120s
`)
}

// CaddyConfig is the Caddy configuration the bench runs (JSON, Caddy's
// native form): one reverse_proxy to the producer that flushes every write
// at once (flush_interval -1), HTTP/1.1 to the producer with up to 2,048
// idle kept connections for two minutes, no buffering of responses, no
// admin endpoint (each case runs its own Caddy), no automatic HTTPS,
// errors only in the log. The request (the RunAgentInput, a few hundred
// bytes) is read whole before it is forwarded (buffer_requests), as the
// bench's net/http baselines do: streamed from the consumer's connection,
// net/http's Transport may find the server's request body closed after
// the answer has begun, and then closes the producer's connection inside
// the answer (a few runs in every quick run cut after their first event;
// bench/README, Caveats).
func CaddyConfig(listen, upstream string) string {
	r := strings.NewReplacer("LISTEN", listen, "UPSTREAM", upstream)
	return r.Replace(`{
  "admin": {"disabled": true, "config": {"persist": false}},
  "logging": {"logs": {"default": {"level": "ERROR"}}},
  "apps": {"http": {"servers": {"bench": {
    "listen": ["LISTEN"],
    "automatic_https": {"disable": true},
    "idle_timeout": "120s",
    "routes": [{"handle": [{
      "handler": "reverse_proxy",
      "upstreams": [{"dial": "UPSTREAM"}],
      "flush_interval": -1,
      "buffer_requests": true,
      "transport": {
        "protocol": "http",
        "versions": ["1.1"],
        "dial_timeout": "10s",
        "keep_alive": {"enabled": true, "max_idle_conns_per_host": 2048, "idle_timeout": "120s"}
      }
    }]}]
  }}}}
}
`)
}

// NginxConfig is the nginx configuration the bench runs: one worker (to
// compare like with like; CPU per event is reported too, which is fair
// whatever the worker count), proxy buffering off, HTTP/1.1 with pooled
// upstream connections, and timeouts long enough for idle streams.
func NginxConfig(dir, listen, upstream string, files uint64) string {
	r := strings.NewReplacer("DIR", dir, "LISTEN", listen, "UPSTREAM", upstream,
		"FILES", strconv.FormatUint(files, 10), "CONNS", strconv.FormatUint(files-100, 10))
	return r.Replace(`daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile FILES;
user root;
pid DIR/nginx.pid;
error_log DIR/error.log warn;
events {
    worker_connections CONNS;
    use epoll;
}
http {
    access_log off;
    client_body_temp_path DIR/client_body;
    proxy_temp_path DIR/proxy;
    fastcgi_temp_path DIR/fastcgi;
    uwsgi_temp_path DIR/uwsgi;
    scgi_temp_path DIR/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    upstream producer {
        server UPSTREAM;
        keepalive 2048;
        keepalive_requests 1000000;
    }
    server {
        listen LISTEN backlog=4096;
        location / {
            proxy_pass http://producer;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }
    }
}
`)
}
