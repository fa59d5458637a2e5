package cli

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/relay"
)

func TestCORSFlagsAndEnvironment(t *testing.T) {
	c := flagDefaults(t)
	if len(c.cors.AllowOrigins) != 0 {
		t.Fatalf("CORS is on by default: %+v", c.cors)
	}
	want := relay.CORSOptions{AllowMethods: []string{"GET", "HEAD", "POST"}, AllowHeaders: []string{"Accept", "Authorization", "Content-Type"}, ExposeHeaders: []string{}, MaxAge: 10 * time.Minute}
	if !reflect.DeepEqual(c.cors, want) {
		t.Errorf("defaults %+v, want %+v", c.cors, want)
	}

	env := map[string]string{
		"AGUI_RELAY_CORS_ALLOW_ORIGINS":     "https://app.example.com, http://localhost:3000",
		"AGUI_RELAY_CORS_ALLOW_HEADERS":     "content-type,x-tenant",
		"AGUI_RELAY_CORS_ALLOW_CREDENTIALS": "true",
		"AGUI_RELAY_CORS_MAX_AGE":           "1h",
	}
	c, err := parseServe([]string{"--cors-expose-headers", "X-Request-Id"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = relay.CORSOptions{
		AllowOrigins: []string{"https://app.example.com", "http://localhost:3000"}, AllowMethods: []string{"GET", "HEAD", "POST"},
		AllowHeaders: []string{"content-type", "x-tenant"}, ExposeHeaders: []string{"X-Request-Id"}, AllowCredentials: true, MaxAge: time.Hour,
	}
	if !reflect.DeepEqual(c.cors, want) {
		t.Errorf("from flags and environment %+v, want %+v", c.cors, want)
	}

	for _, args := range [][]string{
		{"--cors-allow-origins", "*", "--cors-allow-credentials"},
		{"--cors-allow-origins", "https://app.example.com/"},
	} {
		if _, err := parseServe(args, func(string) string { return "" }, io.Discard); err == nil || !strings.HasPrefix(err.Error(), "--cors-allow-origins: ") {
			t.Errorf("%q: %v, want an error about --cors-allow-origins", args, err)
		}
	}
}

func TestRouteCORSOption(t *testing.T) {
	c := flagDefaults(t, "--upstream", "http://127.0.0.1:8000", "--cors-allow-origins", "https://app.example.com", "--cors-max-age", "5m")
	routes, err := parseRoutes([]byte(`
routes:
  - {name: inherits, prefix: /a}
  - name: own
    prefix: /b
    cors: {allowOrigins: "*", allowHeaders: [content-type], exposeHeaders: "X-One, X-Two", maxAge: "0"}
  - {name: none, prefix: /c, cors: {allowOrigins: []}}
  - name: credentials
    prefix: /
    cors: {allowCredentials: true}
`), c)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]relay.CORSOptions{}
	for _, rc := range routes {
		got[rc.name] = rc.cors
	}
	want := map[string]relay.CORSOptions{
		"inherits": c.cors,
		"own": {AllowOrigins: []string{"*"}, AllowMethods: c.cors.AllowMethods, AllowHeaders: []string{"content-type"},
			ExposeHeaders: []string{"X-One", "X-Two"}},
		"none":        {AllowOrigins: []string{}, AllowMethods: c.cors.AllowMethods, AllowHeaders: c.cors.AllowHeaders, ExposeHeaders: []string{}, MaxAge: 5 * time.Minute},
		"credentials": {AllowOrigins: c.cors.AllowOrigins, AllowMethods: c.cors.AllowMethods, AllowHeaders: c.cors.AllowHeaders, ExposeHeaders: []string{}, AllowCredentials: true, MaxAge: 5 * time.Minute},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes' CORS\n%+v\nwant\n%+v", got, want)
	}
	table, err := routeTable(routes, relayShared{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range table.Routes() {
		if on := r.Relay.CORS != nil; on != (r.Name != "none") {
			t.Errorf("route %s: CORS on %v", r.Name, on)
		}
	}

	for file, want := range map[string]string{
		`{"routes":[{"name":"a","prefix":"/","cors":{"allowOrigins":"*","allowCredentials":true}}]}`: `routes[0] "a": cors: credentials with allowed origins *`,
		`{"routes":[{"name":"a","prefix":"/","cors":{"allowOrigin":"*"}}]}`:                          `routes[0] "a": cors: unknown field "allowOrigin"`,
		`{"routes":[{"name":"a","prefix":"/","cors":{"allowHeaders":5}}]}`:                           `routes[0] "a": cors: allowHeaders: 5: want a list of strings`,
		`{"routes":[{"name":"a","prefix":"/","cors":{"maxAge":600}}]}`:                               `routes[0] "a": cors: maxAge: 600: want a duration`,
	} {
		if _, err := parseRoutes([]byte(file), c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// The relay started by serve with --cors-allow-origins answers a page's
// preflight itself and puts the policy on the demo agent's stream.
func TestServeWithCORS(t *testing.T) {
	at, _, _ := startServe(t, func(c *serveConfig) { c.cors.AllowOrigins = []string{"http://127.0.0.1:3000"} })
	req, _ := http.NewRequest("OPTIONS", "http://"+at.relay+"/agent", nil)
	req.Header.Set("Origin", "http://127.0.0.1:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:3000" || resp.Header.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ = http.NewRequest("POST", "http://"+at.relay+"/agent", strings.NewReader(`{"threadId":"t","runId":"r","messages":[],"protocolVersion":"1.0"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:3000")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:3000" || !strings.Contains(string(b), "RUN_FINISHED") {
		t.Errorf("run: %d %v %.200s", resp.StatusCode, resp.Header, b)
	}
}
