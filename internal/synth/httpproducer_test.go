package synth

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sliceRecorder records each write and how many flushes followed it.
type sliceRecorder struct {
	writes  [][]byte
	flushes int
}

func (s *sliceRecorder) Write(b []byte) (int, error) {
	s.writes = append(s.writes, append([]byte(nil), b...))
	return len(b), nil
}
func (s *sliceRecorder) Flush() { s.flushes++ }

// The body goes out in slices of exactly the size asked, the last one
// shorter, each flushed, and together they are the run as rendered.
func TestStreamSlices(t *testing.T) {
	kinds := NewMixedPlan(Dialect10, 2000, Mix{TextOnly: true, SubagentEvery: 10}).Kinds
	rec := &sliceRecorder{}
	rw := RunWriter{D: Dialect10, RunID: "r", Thread: "t"}
	sent, _, err := StreamSlices(rec, rec, kinds, &rw, 4096, nil)
	if err != nil || sent != int64(len(kinds)) {
		t.Fatalf("sent %d of %d: %v", sent, len(kinds), err)
	}
	if rec.flushes != len(rec.writes) || len(rec.writes) < 10 {
		t.Errorf("%d writes, %d flushes", len(rec.writes), rec.flushes)
	}
	for i, w := range rec.writes {
		if (i < len(rec.writes)-1 && len(w) != 4096) || len(w) == 0 || len(w) > 4096 {
			t.Errorf("write %d of %d: %d bytes", i, len(rec.writes), len(w))
		}
	}
	chk := NewRunCheck(NewMixedPlan(Dialect10, 2000, Mix{TextOnly: true, SubagentEvery: 10}), true)
	pending := splitEvents(t, bytes.Join(rec.writes, nil), func(ev []byte) { chk.Event(ev) })
	if err := chk.Err(); err != nil || pending {
		t.Errorf("slices do not make the run: %v (pending %v)", err, pending)
	}
}

// The net/http producer streams the run its query asks for, or, with no
// query, the run its input's forwardedProps.aguibench asks for; it
// refuses what it does not stream.
func TestHTTPProducer(t *testing.T) {
	p, err := StartHTTPProducer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rp := RunParams{Dialect: Dialect10, Events: 3006, Mix: Mix{TextOnly: true, SubagentEvery: 10}}
	post := func(path, input string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Post("http://"+p.Addr()+path, "application/json", strings.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for _, tc := range []struct{ path, input string }{
		{rp.Path(), `{"threadId":"t","runId":"run-q","messages":[]}`},
		{"/run", `{"threadId":"t","runId":"run-b","messages":[],"forwardedProps":{"` + BodyParamsKey + `":"` + rp.Query() + `"}}`},
	} {
		resp, body := post(tc.path, tc.input)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %s %q: %.200s", tc.path, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		chk := NewRunCheck(NewMixedPlan(rp.Dialect, rp.Events, rp.Mix), true)
		splitEvents(t, body, func(ev []byte) { chk.Event(ev) })
		if err := chk.Err(); err != nil {
			t.Errorf("%s: %v", tc.path, err)
		}
		runID := tc.input[strings.Index(tc.input, "run-") : strings.Index(tc.input, "run-")+5]
		if !bytes.Contains(body, []byte(`"runId":"`+runID+`"`)) {
			t.Errorf("%s: the run's id is not the input's %s", tc.path, runID)
		}
	}
	for _, path := range []string{"/run?rate=20", "/run?idle=1", "/run?events=1"} {
		if resp, _ := post(path, `{}`); resp.StatusCode != 400 {
			t.Errorf("%s: %s, want 400", path, resp.Status)
		}
	}
	if got := p.Runs.Load(); got != 2 {
		t.Errorf("%d runs counted, want 2", got)
	}
}

// The raw producer takes its parameters from the input too when its
// target has none.
func TestProducerParamsFromBody(t *testing.T) {
	if got := paramsTarget("/run", "dialect=legacy&events=7"); got != "/run?dialect=legacy&events=7" {
		t.Errorf("no query: %q", got)
	}
	if got := paramsTarget("/run?events=9", "events=7"); got != "/run?events=9" {
		t.Errorf("a query wins: %q", got)
	}
	p := testProducer(t)
	rp := RunParams{Dialect: DialectLegacy, Events: 77}
	resp, err := http.Post("http://"+p.Addr()+"/run", "application/json",
		strings.NewReader(`{"threadId":"t","runId":"r","forwardedProps":{"`+BodyParamsKey+`":"`+rp.Query()+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	chk := NewRunCheck(NewPlan(DialectLegacy, 77), true)
	splitEvents(t, body, func(ev []byte) { chk.Event(ev) })
	if err := chk.Err(); err != nil {
		t.Error(err)
	}
}
