package demo

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/synth"
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
	url := startAgent(t, &Agent{Recordings: Recordings()})
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
	url := startAgent(t, &Agent{Recordings: Recordings(), Version: negotiate.MustParse("1.0")})
	_, body := post(t, url+"/agent", `{"threadId":"a\"b\u00e9","runId":"</r>","messages":[]}`)
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
	url := startAgent(t, &Agent{Recordings: Recordings()})
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

// The demo agent answers on its path only: any other path, or method, is a
// 404 that names the paths it has and how --upstream joins paths, so that
// a mistake with the path shows on the demo as on a real agent.
func TestAgentAnswersOnItsPathOnly(t *testing.T) {
	url := startAgent(t, &Agent{Recordings: Recordings()})
	for _, tc := range []struct{ method, path string }{
		{"POST", "/whatever"}, {"POST", "/agent/agent"}, {"POST", "/"}, {"POST", "/agent/"},
		{"GET", "/agent"}, {"GET", "/capabilities"}, {"POST", "/agent/capabilities"},
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(`{"threadId":"t","runId":"r","messages":[]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, want := range []string{"no " + tc.method + " " + tc.path + ":", "POST /agent (a run)", "GET /agent/capabilities",
			"appends a request's path and query to --upstream's base URL", "goes to http://127.0.0.1:8000/api/agent?x=1"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s %s: body lacks %q: %s", tc.method, tc.path, want, b)
			}
		}
	}
	other := startAgent(t, &Agent{Recordings: Recordings(), Path: "/api/run"})
	if status, body := post(t, other+"/api/run", `{"threadId":"t","runId":"r","messages":[]}`); status != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Errorf("Path /api/run: %d %s", status, body)
	}
	if status, body := post(t, other+"/agent", `{"threadId":"t","runId":"r","messages":[]}`); status != 404 || !strings.Contains(body, "POST /api/run (a run)") {
		t.Errorf("Path /api/run, POST /agent: %d %s", status, body)
	}
}

// The synthetic scenario, asked for by query or by forwardedProps, streams
// the run it was asked for: its length, its mix, its delta size and its
// dialect, every stamp once and in order, the ids of the input.
func TestAgentSyntheticScenario(t *testing.T) {
	url := startAgent(t, &Agent{Recordings: Recordings()})
	input := `{"threadId":"t\"1","runId":"r1","messages":[]`
	tests := []struct {
		name, query, props string
		events             int
		mix                synth.Mix
		delta              int
		has, hasNot        []string
	}{
		{"defaults", "?scenario=synthetic", "", synth.DefaultEvents, synth.Mix{}, 0,
			[]string{`"protocolVersion":"1.0"`, "TOOL_CALL_START", "REASONING_START", `"threadId":"t\"1"`}, []string{"THINKING"}},
		{"by query", "?scenario=synthetic&events=500&tools=0&delta=40", "", 500, synth.Mix{NoTools: true}, 40,
			[]string{"REASONING_START"}, []string{"TOOL_CALL"}},
		{"by forwardedProps", "", `,"forwardedProps":{"demo":{"scenario":"synthetic","events":300,"reasoning":false,"version":"0.0.40"}}`, 300, synth.Mix{NoReasoning: true}, 0,
			[]string{"TOOL_CALL_START"}, []string{"REASONING", "THINKING", "protocolVersion"}},
		{"legacy by version", "?scenario=synthetic&version=0.0.40&events=200", "", 200, synth.Mix{}, 0,
			[]string{"THINKING_START"}, []string{"REASONING", "protocolVersion"}},
		{"paced", "?scenario=synthetic&events=20&rate=2000", "", 20, synth.Mix{}, 0, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, url+"/agent"+tc.query, input+tc.props+"}")
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			d := synth.Dialect10
			if strings.Contains(tc.query+tc.props, "0.0.40") {
				d = synth.DialectLegacy
			}
			plan := synth.NewMixedPlan(d, tc.events, tc.mix)
			chk := synth.NewRunCheck(plan, true)
			sc := event.NewScanner(nil, 0)
			err := sc.Push([]byte(body), func(f event.Frame) {
				if !f.HasData() {
					return
				}
				ev := f.Data
				if !json.Valid(ev) {
					t.Errorf("not JSON: %s", ev)
				}
				if tc.delta > 0 && bytes.Contains(ev, []byte(`"TEXT_MESSAGE_CONTENT"`)) {
					text := gjson.GetBytes(ev, "delta").String()
					if i := strings.IndexByte(text, '#'); i != tc.delta && !(i < 0 && len(text) == tc.delta) {
						t.Errorf("delta text of %d bytes, want %d: %q", i, tc.delta, text)
					}
				}
				chk.Event(ev)
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := chk.Err(); err != nil {
				t.Error(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("stream lacks %s", s)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(body, s) {
					t.Errorf("stream has %s", s)
				}
			}
		})
	}
	for _, q := range []string{"events=1", "events=x", "rate=-1", "delta=99999999", "tools=maybe", "idle=1"} {
		status, body := post(t, url+"/agent?scenario=synthetic&"+q, input+"}")
		if status != 400 || !strings.Contains(body, "synthetic scenario: ") {
			t.Errorf("%s: status %d: %s", q, status, body)
		}
	}
}
