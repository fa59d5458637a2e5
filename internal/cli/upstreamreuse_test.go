package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// --upstream-reuse (and AGUI_RELAY_UPSTREAM_REUSE, and a route's
// upstreamReuse) takes always or never; anything else is refused at start,
// exit 2, naming both.
func TestUpstreamReuseTakesAlwaysOrNever(t *testing.T) {
	if c := flagDefaults(t); c.noReuse {
		t.Error("the default is never, want always")
	}
	if c := flagDefaults(t, "--upstream-reuse", "never"); !c.noReuse {
		t.Error("--upstream-reuse never: connections reused")
	}
	env := map[string]string{"AGUI_RELAY_UPSTREAM_REUSE": "never"}
	if c, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard); err != nil || !c.noReuse {
		t.Errorf("AGUI_RELAY_UPSTREAM_REUSE=never: %v, noReuse %v", err, c != nil && c.noReuse)
	}
	var stderr strings.Builder
	args := []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--upstream-reuse", "sometimes"}
	if code := run(args, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), `--upstream-reuse "sometimes": want always`) || !strings.Contains(stderr.String(), "or never") {
		t.Errorf("--upstream-reuse sometimes: exit %d, %q; want 2 and the values it takes", code, stderr.String())
	}

	c := flagDefaults(t, "--upstream", "http://127.0.0.1:1", "--upstream-reuse", "never")
	routes, err := parseRoutes([]byte("routes:\n  - {name: a, prefix: /a, upstreamReuse: always}\n  - {name: b, prefix: /b}\n"), c)
	if err != nil {
		t.Fatal(err)
	}
	if routes[0].noReuse || !routes[1].noReuse {
		t.Errorf("route a (always) noReuse %v, route b (the flag's never) %v", routes[0].noReuse, routes[1].noReuse)
	}
	for _, bad := range []string{"sometimes", "false", "[never]"} {
		_, err := parseRoutes([]byte("routes:\n  - {name: a, prefix: /a, upstreamReuse: "+bad+"}\n"), c)
		if err == nil || !strings.Contains(err.Error(), `routes[0] "a": upstreamReuse: `) || !strings.Contains(err.Error(), "want always") {
			t.Errorf("upstreamReuse: %s: %v, want an error naming the field and the values it takes", bad, err)
		}
	}
}

// With --upstream-reuse never the producer sees each request on a
// connection of its own, asked to close; with always, one connection
// carries them one after another.
func TestServeUpstreamReuseNeverOpensAConnectionPerRequest(t *testing.T) {
	for _, noReuse := range []bool{false, true} {
		var conns atomic.Int32
		var closes atomic.Int32
		producer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Close {
				closes.Add(1)
			}
			io.WriteString(w, "ok") //nolint:errcheck
		}))
		producer.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		producer.Start()
		t.Cleanup(producer.Close)
		at, _, _ := startServe(t, func(c *serveConfig) { c.upstream, c.noReuse = producer.URL, noReuse })
		for range 3 {
			resp, err := http.Get("http://" + at.relay + "/capabilities")
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
				t.Fatalf("GET: %d %q", resp.StatusCode, b)
			}
			resp.Body.Close()
		}
		want, wantCloses := int32(1), int32(0)
		if noReuse {
			want, wantCloses = 3, 3
		}
		if conns.Load() != want || closes.Load() != wantCloses {
			t.Errorf("noReuse %v: 3 requests on %d connections, %d asking for the close; want %d, %d", noReuse, conns.Load(), closes.Load(), want, wantCloses)
		}
	}
}
