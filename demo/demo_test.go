package demo

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/negotiate"
)

func startAgent(t *testing.T, a *Agent) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: a.Handle}
	go srv.Serve(ln)                     //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	return "http://" + ln.Addr().String()
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestAgentSpeaksTheVersionAskedFor(t *testing.T) {
	url := startAgent(t, &Agent{Recordings: os.DirFS("../testdata/demo")})
	input := `{"threadId":"t1","runId":"r1","messages":[]`
	tests := []struct {
		name, query, props string
		status             int
		has, hasNot        string
	}{
		{"default is the newest", "", "", 200, `"protocolVersion":"1.0"`, "THINKING_START"},
		{"legacy by query", "?version=0.0.40", "", 200, `"type":"THINKING_START"`, `"protocolVersion"`},
		{"legacy by forwardedProps", "", `,"forwardedProps":{"demo":{"version":"0.0.40"}}`, 200, `"type":"THINKING_START"`, "REASONING"},
		{"query wins", "?version=1.0", `,"forwardedProps":{"demo":{"version":"0.0.40"}}`, 200, "REASONING_START", "THINKING"},
		{"newest at or below", "?version=0.0.59", "", 200, "THINKING_START", "REASONING"},
		{"nothing that old", "?version=0.0.30", "", 404, "", ""},
		{"not a version", "?version=latest", "", 400, "", ""},
		{"no such scenario", "?scenario=nope", "", 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, url+"/agent"+tc.query, input+tc.props+"}")
			if status != tc.status {
				t.Fatalf("status %d: %s", status, body)
			}
			if tc.has != "" && !strings.Contains(body, tc.has) {
				t.Errorf("stream lacks %s", tc.has)
			}
			if tc.hasNot != "" && strings.Contains(body, tc.hasNot) {
				t.Errorf("stream has %s", tc.hasNot)
			}
		})
	}
}

func TestAgentPutsTheRunIdsIn(t *testing.T) {
	url := startAgent(t, &Agent{Recordings: os.DirFS("../testdata/demo"), Version: negotiate.MustParse("1.0")})
	_, body := post(t, url+"/x", `{"threadId":"a\"b\u00e9","runId":"</r>","messages":[]}`)
	for _, want := range []string{
		`{"type":"RUN_STARTED","threadId":"a\"bé","runId":"\u003c/r\u003e","protocolVersion":"1.0"}`,
		`{"type":"RUN_FINISHED","threadId":"a\"bé","runId":"\u003c/r\u003e"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %s", want)
		}
	}
	if strings.Contains(body, "$RUN_ID") || strings.Contains(body, "$THREAD_ID") {
		t.Error("placeholders left in the stream")
	}
}

func TestAgentCapabilities(t *testing.T) {
	url := startAgent(t, &Agent{Recordings: os.DirFS("../testdata/demo")})
	resp, err := http.Get(url + "/agent/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"versions":["0.0.40","1.0"]`) {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
