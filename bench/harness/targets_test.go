package harness

import (
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/synth"
)

// The addresses are all different and free once returned: the proxy's and
// its admin address must not be one port.
func TestFreePortsAreDistinctAndFree(t *testing.T) {
	addrs, err := FreePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s handed out twice in %v", a, addrs)
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s not free: %v", a, err)
		}
		ln.Close()
	}
}

// haproxySections splits an HAProxy configuration into its sections'
// directive lines, keyed by the section's header line.
func haproxySections(cfg string) map[string][]string {
	out := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(cfg, "\n") {
		switch {
		case strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
		case !strings.HasPrefix(l, " "):
			cur = strings.TrimSpace(l)
			out[cur] = nil
		default:
			out[cur] = append(out[cur], strings.Join(strings.Fields(l), " "))
		}
	}
	return out
}

// HAProxy streams: HTTP mode with keep-alive on both sides and idle
// producer connections reused, no request buffering, nothing held back
// for more, one thread as nginx has one worker, hour-long timeouts on
// both sides of a stream, and as many connections as the open-file limit
// holds two sockets per stream.
func TestHAProxyConfig(t *testing.T) {
	s := haproxySections(HAProxyConfig("127.0.0.1:8001", "127.0.0.1:9001", 20000))
	has := func(sec, line string) {
		t.Helper()
		if !slices.Contains(s[sec], line) {
			t.Errorf("%s: no %q in %q", sec, line, s[sec])
		}
	}
	has("global", "nbthread 1")
	has("global", "maxconn 9900")
	for _, l := range []string{"mode http", "option http-keep-alive", "option http-no-delay", "http-reuse always", "timeout client 3600s", "timeout server 3600s"} {
		has("defaults", l)
	}
	has("frontend bench", "bind 127.0.0.1:8001 backlog 4096")
	has("frontend bench", "default_backend producer")
	has("backend producer", "server producer 127.0.0.1:9001 pool-purge-delay 120s")
	for sec, lines := range s {
		for _, l := range lines {
			if strings.Contains(l, "http-buffer-request") || strings.Contains(l, "httpclose") || strings.Contains(l, "http-server-close") || strings.HasPrefix(l, "log ") {
				t.Errorf("%s: %q buffers, closes or logs", sec, l)
			}
		}
	}
	if len(s) != 4 {
		t.Errorf("sections %v", s)
	}
}

// Caddy streams: every write flushed at once, HTTP/1.1 to the producer
// with kept connections, no admin endpoint (cases run side by side), no
// automatic HTTPS on the bench's plain port.
func TestCaddyConfig(t *testing.T) {
	var cfg struct {
		Admin struct{ Disabled bool }
		Apps  struct {
			HTTP struct {
				Servers map[string]struct {
					Listen         []string
					AutomaticHTTPS struct{ Disable bool } `json:"automatic_https"`
					Routes         []struct {
						Handle []struct {
							Handler        string
							FlushInterval  *int  `json:"flush_interval"`
							BufferRequests bool  `json:"buffer_requests"`
							BufferResp     *bool `json:"buffer_responses"`
							Upstreams      []struct{ Dial string }
							Transport      struct {
								Protocol  string
								Versions  []string
								KeepAlive struct {
									Enabled             bool
									MaxIdleConnsPerHost int `json:"max_idle_conns_per_host"`
								} `json:"keep_alive"`
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(CaddyConfig("127.0.0.1:8002", "127.0.0.1:9002")), &cfg); err != nil {
		t.Fatal(err)
	}
	srv, ok := cfg.Apps.HTTP.Servers["bench"]
	if !ok || !cfg.Admin.Disabled || !srv.AutomaticHTTPS.Disable || !slices.Equal(srv.Listen, []string{"127.0.0.1:8002"}) || len(srv.Routes) != 1 || len(srv.Routes[0].Handle) != 1 {
		t.Fatalf("server %+v, admin disabled %v", srv, cfg.Admin.Disabled)
	}
	h := srv.Routes[0].Handle[0]
	if h.Handler != "reverse_proxy" || h.FlushInterval == nil || *h.FlushInterval != -1 || h.BufferResp != nil || len(h.Upstreams) != 1 || h.Upstreams[0].Dial != "127.0.0.1:9002" {
		t.Errorf("handler %+v", h)
	}
	if tr := h.Transport; tr.Protocol != "http" || !slices.Equal(tr.Versions, []string{"1.1"}) || !tr.KeepAlive.Enabled || tr.KeepAlive.MaxIdleConnsPerHost < 1000 {
		t.Errorf("transport %+v", tr)
	}
	if !h.BufferRequests {
		t.Error("the request is streamed to the producer (net/http's Transport then cuts some answers; see CaddyConfig)")
	}
}

// A proxy with a fixed route gets every run at that route, its parameters
// in the input's forwardedProps, where the producer finds them again.
func TestRunRequestCarriesParams(t *testing.T) {
	rp := synth.RunParams{Dialect: synth.DialectLegacy, Events: 300, Rate: 20, Mix: synth.Mix{NoTools: true, NoState: true}}
	url, input := runRequest("127.0.0.1:7", &Proc{RunPath: CopilotKitRunPath}, rp, "r-1")
	if url != "http://127.0.0.1:7"+CopilotKitRunPath {
		t.Errorf("url %s", url)
	}
	var in struct {
		ThreadID, RunID string
		ForwardedProps  map[string]string
	}
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatal(err)
	}
	got, err := synth.ParseRunParams("/run?" + in.ForwardedProps[synth.BodyParamsKey])
	if err != nil || got != rp || in.RunID != "r-1" || in.ThreadID == "" {
		t.Errorf("input %s carries %+v, %v", input, got, err)
	}
	url, input = runRequest("127.0.0.1:7", &Proc{}, rp, "r-2")
	if got, err := synth.ParseRunParams(strings.TrimPrefix(url, "http://127.0.0.1:7")); err != nil || got != rp || !json.Valid(input) {
		t.Errorf("query %s: %+v, %v", url, got, err)
	}
}
