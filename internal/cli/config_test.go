package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

func flagDefaults(t *testing.T, args ...string) *serveConfig {
	t.Helper()
	c, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoutesFileYAMLAndJSONWithFlagDefaults(t *testing.T) {
	yamlFile := `
# two agents behind one relay
routes:
  - name: legacy
    prefix: /agents/legacy
    upstream: http://127.0.0.1:8001/api
    stripPrefix: true
    producerVersion: 0.0.40
    consumerVersion: "1.0"
    timeouts: {connect: 2s, firstByte: 1m, idle: "0", run: 30m, consumerStall: 15s, body: 20s}
    keepAlive: 10s
    maxBody: 1MiB
    maxFrame: 65536
    maxConns: 64
  - name: new
    prefix: /
`
	jsonFile := `{"routes":[
	  {"name":"legacy","prefix":"/agents/legacy","upstream":"http://127.0.0.1:8001/api","stripPrefix":true,
	   "producerVersion":"0.0.40","consumerVersion":"1.0",
	   "timeouts":{"connect":"2s","firstByte":"1m","idle":0,"run":"30m","consumerStall":"15s","body":"20s"},"keepAlive":"10s","maxBody":"1MiB","maxFrame":65536,"maxConns":64},
	  {"name":"new","prefix":"/"}]}`
	c := flagDefaults(t, "--upstream", "http://127.0.0.1:8002", "--consumer-version", "0.0.45", "--idle-timeout", "90s", "--max-frame", "2MiB", "--consumer-stall-timeout", "2m", "--keepalive", "0", "--body-timeout", "45s")
	for name, file := range map[string]string{"yaml": yamlFile, "json": jsonFile} {
		routes, err := parseRoutes([]byte(file), c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []routeConfig{{
			name: "legacy", prefix: "/agents/legacy", upstream: "http://127.0.0.1:8001/api", stripPrefix: true,
			producerVersion: negotiate.MustParse("0.0.40"), consumerVersion: negotiate.MustParse("1.0"),
			connectTimeout: 2 * time.Second, firstByteTimeout: time.Minute, idleTimeout: 0, runTimeout: 30 * time.Minute,
			consumerStallTimeout: 15 * time.Second, bodyTimeout: 20 * time.Second, keepAlive: 10 * time.Second,
			maxBody: 1 << 20, maxFrame: 65536, maxConns: 64, cors: c.cors,
		}, {
			// Everything left out comes from the flags.
			name: "new", prefix: "/", upstream: "http://127.0.0.1:8002",
			consumerVersion: negotiate.MustParse("0.0.45"),
			connectTimeout:  10 * time.Second, firstByteTimeout: 5 * time.Minute, idleTimeout: 90 * time.Second, runTimeout: time.Hour,
			consumerStallTimeout: 2 * time.Minute, bodyTimeout: 45 * time.Second,
			maxBody: 64 << 20, maxFrame: 2 << 20, maxConns: 4096, cors: c.cors,
		}}
		if fmt.Sprint(routes) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, routes, want)
		}
	}
}

func TestRoutesFileErrorsNameTheRouteAndTheField(t *testing.T) {
	c := flagDefaults(t)
	route := func(fields string) string {
		return "routes:\n  - name: ok\n    prefix: /ok\n    upstream: http://127.0.0.1:1\n  - name: bad\n" + fields
	}
	for _, tc := range []struct{ file, want string }{
		{"", "no routes"},
		{"routes: []", "no routes"},
		{"listen: 0.0.0.0:8080\nroutes: []", `unknown field "listen": the file has one key, routes`},
		{"routes: {name: a}", "routes: want a list, got an object"},
		{"routes:\n  - name: a\n    name: b", `not valid YAML or JSON: yaml: unmarshal errors: line 3: key "name" already set in map`},
		{"routes: [\n", "not valid YAML or JSON"},
		{route("    prefix: /b\n    upstream: http://127.0.0.1:1\n    timeout: 5s"), `routes[1] "bad": unknown field "timeout"`},
		{route("    prefix: /b\n    upstream: http://127.0.0.1:1\n    timeouts: {idel: 5s}"), `routes[1] "bad": unknown field "idel"`},
		{route("    prefix: /b\n    upstream: http://127.0.0.1:1\n    stripPrefix: yes please"), `routes[1] "bad": stripPrefix: want true or false, got a string`},
		{"routes:\n  - prefix: /b\n    upstream: http://127.0.0.1:1", "routes[0]: name: required"},
		{"routes:\n  - name: a b\n    prefix: /b", `routes[0] "a b": name: "a b": want letters`},
		{route("    upstream: http://127.0.0.1:1"), `routes[1] "bad": prefix: required`},
		{route("    prefix: /b/\n    upstream: http://127.0.0.1:1"), `routes[1] "bad": prefix: "/b/": want no trailing slash`},
		{route("    prefix: b\n    upstream: http://127.0.0.1:1"), `routes[1] "bad": prefix: "b": want an absolute path`},
		{route("    prefix: /b"), `routes[1] "bad": upstream: required (there is no --upstream to default to)`},
		{route("    prefix: /b\n    upstream: 127.0.0.1:8000"), `routes[1] "bad": upstream: "127.0.0.1:8000": want an absolute http(s) base URL`},
		{route("    prefix: /b\n    upstream: ftp://agent/x"), `routes[1] "bad": upstream: "ftp://agent/x"`},
		{route("    prefix: /b\n    upstream: http://agent/x?y=1"), `routes[1] "bad": upstream: "http://agent/x?y=1"`},
		{route("    prefix: /b\n    upstream: http://a\n    producerVersion: 1.0"), `routes[1] "bad": producerVersion: 1: write the version as a string, "1.0"`},
		{route("    prefix: /b\n    upstream: http://a\n    producerVersion: 1.0.0"), `routes[1] "bad": producerVersion: version "1.0.0": want MAJOR.MINOR`},
		{route("    prefix: /b\n    upstream: http://a\n    producerVersion: \"2.0\""), `routes[1] "bad": producerVersion: 2.0 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, ag-ui-protocol@0.1.4 to 1.0.0; see agui-relay versions)`},
		{route("    prefix: /b\n    upstream: http://a\n    consumerVersion: 0.0.450"), `routes[1] "bad": consumerVersion: 0.0.450 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, auto; see agui-relay versions)`},
		{route("    prefix: /b\n    upstream: http://a\n    consumerVersion: 0.0.30"), `routes[1] "bad": consumerVersion: 0.0.30 is not served: consumers older than 0.0.37`},
		{route("    prefix: /b\n    upstream: http://a\n    timeouts: {idle: 5}"), `routes[1] "bad": timeouts.idle: 5: want a duration string such as "30s"`},
		{route("    prefix: /b\n    upstream: http://a\n    timeouts: {consumerStall: soon}"), `routes[1] "bad": timeouts.consumerStall: "soon": want a duration such as "30s"`},
		{route("    prefix: /b\n    upstream: http://a\n    timeouts: {run: 1 hour}"), `routes[1] "bad": timeouts.run: "1 hour": want a duration`},
		{route("    prefix: /b\n    upstream: http://a\n    timeouts: {connect: -1s}"), `routes[1] "bad": timeouts.connect: "-1s": want a duration`},
		{route("    prefix: /b\n    upstream: http://a\n    maxBody: 0"), `routes[1] "bad": maxBody: 0: want a positive size`},
		{route("    prefix: /b\n    upstream: http://a\n    maxFrame: 10 MB"), `routes[1] "bad": maxFrame: "10 MB": want a positive size`},
		{route("    prefix: /b\n    upstream: http://a\n    maxFrame: [1]"), `routes[1] "bad": maxFrame: [1]: want a positive size`},
		{route("    prefix: /b\n    upstream: http://a\n    maxConns: -3"), `routes[1] "bad": maxConns: -3: want a positive whole number`},
		{route("    prefix: /ok\n    upstream: http://a"), `routes[1] "bad": prefix: "/ok" is the prefix of routes[0] "ok" already`},
		{"routes:\n  - name: ok\n    prefix: /a\n    upstream: http://a\n  - name: ok\n    prefix: /b\n    upstream: http://b", `routes[1] "ok": name: "ok" is the name of routes[0] already`},
	} {
		_, err := parseRoutes([]byte(tc.file), c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant an error with %q", tc.file, err, tc.want)
		}
	}
}

func TestInvalidConfigFailsFast(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "routes.yaml")
	os.WriteFile(bad, []byte("routes:\n  - name: a\n    prefix: /a\n    upstream: agent:8000\n"), 0o600)
	var stderr strings.Builder
	if code := run([]string{"serve", "--config", bad, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, nil, io.Discard, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if want := "agui-relay serve: --config " + bad + `: routes[0] "a": upstream: "agent:8000"`; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr %q, want it to start %q", stderr.String(), want)
	}
	stderr.Reset()
	if code := run([]string{"serve", "--config", filepath.Join(dir, "missing.yaml")}, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "missing.yaml: no such file") {
		t.Errorf("missing file: exit %d, %q", code, stderr.String())
	}
}

// A configured version names a release the relay knows: anything else
// stops serve before it listens, with exit 2 and the list of those it
// knows, flag or environment alike.
func TestConfiguredVersionsMustBeKnown(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--consumer-version", "2.0"}, `invalid value "2.0" for flag -consumer-version: 2.0 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, auto; see agui-relay versions)`},
		{[]string{"--consumer-version", "0.0.450"}, `0.0.450 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, auto;`},
		{[]string{"--producer-version", "3.1"}, `invalid value "3.1" for flag -producer-version: 3.1 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, ag-ui-protocol@0.1.4 to 1.0.0; see agui-relay versions)`},
		{[]string{"--producer-version", "0.0.4"}, `0.0.4 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, ag-ui-protocol@0.1.4 to 1.0.0;`},
		{[]string{"--producer-version", "py0.1.99"}, `ag-ui-protocol@0.1.99 is not a release the relay knows (ag-ui-protocol@0.1.4 to 1.0.0;`},
		{[]string{"--demo-version", "1.1"}, `1.1 is not a release the relay knows (0.0.27 to 0.0.59, 1.0;`},
	} {
		var stderr strings.Builder
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, tc.args...)
		if code := run(args, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	env := map[string]string{"AGUI_RELAY_PRODUCER_VERSION": "1.5"}
	if _, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `AGUI_RELAY_PRODUCER_VERSION="1.5": 1.5 is not a release the relay knows`) {
		t.Errorf("from the environment: %v", err)
	}
	for _, args := range [][]string{
		{"--consumer-version", "0.0.37"}, {"--consumer-version", "1.0"}, {"--consumer-version", "auto"},
		{"--producer-version", "0.0.27"}, {"--producer-version", "0.0.59"}, {"--producer-version", "1.0"}, {"--producer-version", "py0.1.19"},
	} {
		flagDefaults(t, args...)
	}
}

// namedProducer answers a GET with its name, and a run with a RUN_STARTED at
// once and a RUN_FINISHED when release closes.
func namedProducer(t *testing.T, name string, release <-chan struct{}) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fmt.Fprintf(w, "%s %s", name, r.URL.RequestURI())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":%q}\n\n", name)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":%q}\n\n", name)
	}))
	t.Cleanup(s.Close)
	return s
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// startServeLogged runs serve with c and log until the test ends.
func startServeLogged(t *testing.T, c *serveConfig, log *zap.Logger) listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan listening, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c, log, nil, func(l listening) { up <- l }) }()
	select {
	case at := <-up:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		return at
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	return listening{}
}

// TestConsumerVersionAuto: auto is the default of --consumer-version, of
// its environment variable and of a route's consumerVersion; "auto" names
// it anywhere, and a route can set it back over a flag that names a release.
func TestConsumerVersionAuto(t *testing.T) {
	for _, args := range [][]string{nil, {"--consumer-version", "auto"}, {"--consumer-version", "0.0.45", "--consumer-version", "auto"}} {
		c := flagDefaults(t, args...)
		if !c.consumerVersion.IsZero() {
			t.Errorf("%q: consumer version %s, want auto", args, c.consumerVersion)
		}
	}
	c, err := parseServe(nil, func(k string) string {
		return map[string]string{"AGUI_RELAY_CONSUMER_VERSION": "auto"}[k]
	}, io.Discard)
	if err != nil || !c.consumerVersion.IsZero() {
		t.Errorf("AGUI_RELAY_CONSUMER_VERSION=auto: %v, %v", c, err)
	}
	c = flagDefaults(t, "--upstream", "http://127.0.0.1:8002", "--consumer-version", "0.0.45")
	routes, err := parseRoutes([]byte("routes:\n  - {name: a, prefix: /a, consumerVersion: auto}\n  - {name: b, prefix: /b}\n  - {name: c, prefix: /c, consumerVersion: \"1.0\"}\n"), c)
	if err != nil {
		t.Fatal(err)
	}
	if !routes[0].consumerVersion.IsZero() || routes[1].consumerVersion.String() != "0.0.45" || routes[2].consumerVersion != negotiate.Current {
		t.Errorf("routes %+v", routes)
	}
	for _, bad := range []string{"AUTO", "auto-ish", "0.0.30"} {
		if _, err := parseServe([]string{"--consumer-version", bad}, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("--consumer-version %s accepted", bad)
		}
	}
}

// A route's consumer stall limit reaches its Relay: its own, else the
// flag's; "0" is no limit (the Relay's negative), never the Relay's
// default.
func TestRouteConsumerStallTimeoutReachesTheRelay(t *testing.T) {
	c := flagDefaults(t, "--upstream", "http://127.0.0.1:8002", "--consumer-stall-timeout", "45s")
	routes, err := parseRoutes([]byte(`
routes:
  - {name: own, prefix: /own, timeouts: {consumerStall: 5s}}
  - {name: unlimited, prefix: /unlimited, timeouts: {consumerStall: "0"}}
  - {name: flag, prefix: /}
`), c)
	if err != nil {
		t.Fatal(err)
	}
	table, err := routeTable(routes, relayShared{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"own": 5 * time.Second, "unlimited": -1, "flag": 45 * time.Second}
	for _, r := range table.Routes() {
		if got := r.Relay.ConsumerStallTimeout; got != want[r.Name] {
			t.Errorf("route %s: ConsumerStallTimeout %v, want %v", r.Name, got, want[r.Name])
		}
	}
	if d := flagDefaults(t).consumerStallTimeout; d != relay.DefaultConsumerStallTimeout {
		t.Errorf("--consumer-stall-timeout defaults to %v, want the Relay's default %v", d, relay.DefaultConsumerStallTimeout)
	}
}

// A route's keep-alive interval reaches its Relay: its own, else the
// flag's; "0" is none.
func TestRouteKeepAliveReachesTheRelay(t *testing.T) {
	c := flagDefaults(t, "--upstream", "http://127.0.0.1:8002", "--keepalive", "20s")
	routes, err := parseRoutes([]byte(`
routes:
  - {name: own, prefix: /own, keepAlive: 5s}
  - {name: none, prefix: /none, keepAlive: "0"}
  - {name: flag, prefix: /}
`), c)
	if err != nil {
		t.Fatal(err)
	}
	table, err := routeTable(routes, relayShared{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"own": 5 * time.Second, "none": 0, "flag": 20 * time.Second}
	for _, r := range table.Routes() {
		if got := r.Relay.KeepAlive; got != want[r.Name] {
			t.Errorf("route %s: KeepAlive %v, want %v", r.Name, got, want[r.Name])
		}
	}
	if _, err := parseRoutes([]byte("routes:\n  - {name: bad, prefix: /, upstream: http://a, keepAlive: often}\n"), c); err == nil || !strings.Contains(err.Error(), "keepAlive") {
		t.Errorf("a bad keepAlive: %v", err)
	}
	if d := flagDefaults(t).consumerStallTimeout; d != relay.DefaultConsumerStallTimeout {
		t.Errorf("--consumer-stall-timeout defaults to %v, want the Relay's default %v", d, relay.DefaultConsumerStallTimeout)
	}
}

// A negative duration is refused by every duration flag, on the command
// line and from the environment, with the routes file's words: it would
// turn its limit off as silently as 0 does. The error names the flag or
// the variable the user set, with the value as written, and says what 0
// means for it where 0 means something.
func TestNegativeDurationsRefused(t *testing.T) {
	const want = `"-1m": want a duration such as "30s" or "5m"`
	// What 0 means for each duration flag of serve, "" where it is no
	// special value.
	zero := map[string]string{
		"connect-timeout": "no limit", "first-byte-timeout": "no limit", "idle-timeout": "no limit",
		"consumer-stall-timeout": "no limit", "run-timeout": "no limit", "body-timeout": "only that limit",
		"keepalive": "none", "cors-max-age": "not sent",
		"shutdown-grace": "", "demo-pace": "",
	}
	wantOf := func(name string) string {
		if z := zero[name]; z != "" {
			return want + ` ("0": ` + z + `)`
		}
		return want
	}
	var names []string
	serveFlags(&serveConfig{}, io.Discard).VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				names = append(names, f.Name)
			}
		}
	})
	if len(names) != len(zero) {
		t.Fatalf("serve's duration flags %q, want those of %v", names, zero)
	}
	for _, name := range names {
		if _, ok := zero[name]; !ok {
			t.Fatalf("--%s: what does 0 mean?", name)
		}
		for _, c := range []struct {
			args    []string
			spelled string // the flag as the error names it
		}{
			{[]string{"--" + name, "-1m"}, "--" + name},
			{[]string{"--" + name + "=-1m"}, "--" + name},
			{[]string{"--" + name, "-2s", "-" + name, "-1m"}, "-" + name}, // the last one is kept
		} {
			_, err := parseServe(c.args, func(string) string { return "" }, io.Discard)
			if err == nil || err.Error() != c.spelled+" "+wantOf(name) {
				t.Errorf("%q: %v, want %s %s", c.args, err, c.spelled, wantOf(name))
			}
		}
		env := map[string]string{EnvName(name): "-1m"}
		_, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard)
		if err == nil || err.Error() != EnvName(name)+"="+wantOf(name) {
			t.Errorf("%s=-1m: %v, want %s=%s", EnvName(name), err, EnvName(name), wantOf(name))
		}
		if _, err := parseServe([]string{"--" + name, "0s"}, func(string) string { return "" }, io.Discard); err != nil {
			t.Errorf("--%s 0s: %v", name, err)
		}
	}
	// The routes file says the same of its durations, and what 0 means.
	dir := t.TempDir()
	path := filepath.Join(dir, "routes.yaml")
	for field, z := range map[string]string{"keepAlive: -1m": "none", "timeouts: {idle: -1m}": "no limit"} {
		if err := os.WriteFile(path, []byte("routes:\n  - name: a\n    prefix: /\n    upstream: http://a\n    "+field+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		w := want + ` ("0": ` + z + `)`
		if _, err := parseServe([]string{"--config", path}, func(string) string { return "" }, io.Discard); err == nil || !strings.HasSuffix(err.Error(), w) {
			t.Errorf("%s in the routes file: %v, want %s", field, err, w)
		}
	}
	// Another command's flags too: load's -d and --ramp, whose 0 is no
	// limit of any kind, and its timeouts, whose 0 is none.
	for _, c := range []struct{ flag, want string }{
		{"-d", "load: -d " + want + "\n"},
		{"--ramp", "load: --ramp " + want + "\n"},
		{"--idle-timeout", "load: --idle-timeout " + want + ` ("0": none)` + "\n"},
	} {
		var stderr strings.Builder
		if code := Run([]string{"load", c.flag, "-1m", "http://127.0.0.1:1/agent"}, strings.NewReader(""), io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("load %s -1m: exit %d, %q, want %q", c.flag, code, stderr.String(), c.want)
		}
	}
}
