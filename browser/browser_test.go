//go:build integration

// Package browser tests the relay with a real browser as its consumer:
// Debian's Chromium, headless, loads a page bundled from the published
// @ag-ui/client releases (1.0.0 and 0.0.59) whose HttpAgent calls the relay
// cross-origin, in front of a test producer on a third origin.
//
//	make browser        # browser/setup.sh (chromium, npm ci), then this test
//
// What it needs (Chromium at /usr/bin/chromium or $CHROMIUM, the Node
// packages of package-lock.json) is installed by setup.sh; without it the
// test fails saying what to run. On a failure the page's log is saved as a
// screenshot in the test's artifact directory (`go test -artifacts`; the
// make target keeps them under browser/out/).
package browser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// liveness bounds waits that only a bug makes long: the page's whole
// scenario, and the producer's wait for the page's word that the first
// event has arrived.
const liveness = 20 * time.Second

// --- the producer -------------------------------------------------------

// keepAlivePause is how long a /pause/ stream's producer is silent after
// its first event: several of the keep-alive relay's intervals (100ms).
const keepAlivePause = 600 * time.Millisecond

// producer is the test's agent: it streams one of the streams below, the
// first frame at once and the rest only once the page has told the test
// that the first event arrived (or after liveness, so that a relay that
// holds events back fails the test instead of hanging it).
type producer struct {
	srv  *http.Server
	base string

	mu        sync.Mutex
	requests  []string // "METHOD /path", in order
	gates     map[string]chan struct{}
	lastSent  map[string]time.Time // runId → when the last frame was written
	released  map[string]bool      // runId → the page's signal released the stream
	ownOrigin string               // the origin the /own-cors/ paths allow
}

// The streams, by path. A frame per element; {run} is the runId.
var streams = map[string][]string{
	// A producer from before the protocolVersion field, of the THINKING_*
	// era (SDK 0.0.37-0.0.44).
	"thinking": {
		`{"type":"RUN_STARTED","threadId":"{thread}","runId":"{run}"}`,
		`{"type":"THINKING_START","title":"Weighing options"}`,
		`{"type":"THINKING_TEXT_MESSAGE_START"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"Lisbon is hilly; "}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"suggest trams."}`,
		`{"type":"THINKING_TEXT_MESSAGE_END"}`,
		`{"type":"THINKING_END"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"a-1","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a-1","delta":"Take tram 28 through Alfama."}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"a-1"}`,
		`{"type":"RUN_FINISHED","threadId":"{thread}","runId":"{run}"}`,
	},
	// A 1.0 producer: a tool result made of content parts, which no 0.0.x
	// client accepts (TOOL_CALL_RESULT.content is a string there).
	"v1": {
		`{"type":"RUN_STARTED","threadId":"{thread}","runId":"{run}","protocolVersion":"1.0"}`,
		`{"type":"TOOL_CALL_START","toolCallId":"call-1","toolCallName":"get_weather"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"call-1","delta":"{\"city\":\"Lisbon\"}"}`,
		`{"type":"TOOL_CALL_END","toolCallId":"call-1"}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"tool-1","toolCallId":"call-1","content":[{"type":"text","text":"21 °C, clear"}],"role":"tool"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"a-1","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a-1","delta":"It is 21 °C and clear in Lisbon."}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"a-1"}`,
		`{"type":"RUN_FINISHED","threadId":"{thread}","runId":"{run}"}`,
	},
}

func startProducer(t *testing.T) *producer {
	t.Helper()
	p := &producer{gates: map[string]chan struct{}{}, lastSent: map[string]time.Time{}, released: map[string]bool{}}
	ln := listen(t)
	p.base = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: liveness}
	go p.srv.Serve(ln) //nolint:errcheck // ends at Close
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// gate returns the channel that releases run's stream.
func (p *producer) gate(run string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.gates[run]
	if !ok {
		g = make(chan struct{})
		p.gates[run] = g
	}
	return g
}

// release lets run's stream go on: the page has its first event.
func (p *producer) release(run string) {
	g := p.gate(run)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.released[run] {
		p.released[run] = true
		close(g)
	}
}

// serve answers /<stream> and /own-cors/<stream>; the latter does CORS of
// its own for ownOrigin, preflight included, as an agent that expects to
// be called from a page does.
func (p *producer) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests = append(p.requests, r.Method+" "+r.URL.Path)
	own := p.ownOrigin
	p.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/")
	pause := time.Duration(0)
	if rest, ok := strings.CutPrefix(path, "pause/"); ok {
		// The agent thinks after its first event: silent for a while.
		path, pause = rest, keepAlivePause
	}
	if rest, ok := strings.CutPrefix(path, "own-cors/"); ok {
		path = rest
		w.Header().Set("Access-Control-Allow-Origin", own)
		w.Header().Set("Vary", "Origin")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "POST")
			w.Header().Set("Access-Control-Allow-Headers", "content-type, accept")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	frames, ok := streams[path]
	if !ok || r.Method != http.MethodPost {
		http.Error(w, "no such stream", http.StatusNotFound)
		return
	}
	var in struct{ ThreadID, RunID string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.RunID == "" {
		http.Error(w, "want a RunAgentInput with a runId", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	write := func(f string) {
		f = strings.NewReplacer("{run}", in.RunID, "{thread}", in.ThreadID).Replace(f)
		fmt.Fprintf(w, "data: %s\n\n", f)
		fl.Flush()
	}
	write(frames[0])
	select {
	case <-p.gate(in.RunID):
	case <-time.After(liveness):
	case <-r.Context().Done():
		return
	}
	select {
	case <-time.After(pause):
	case <-r.Context().Done():
		return
	}
	for _, f := range frames[1 : len(frames)-1] {
		write(f)
	}
	p.mu.Lock()
	p.lastSent[in.RunID] = time.Now()
	p.mu.Unlock()
	write(frames[len(frames)-1])
}

func (p *producer) sawRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// --- the page's origin --------------------------------------------------

// pageServer serves the bundled page, and /seen?run=ID, which the page
// posts once the first event of run ID has arrived.
func startPageServer(t *testing.T, dir string, p *producer) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/seen", func(w http.ResponseWriter, r *http.Request) {
		p.release(r.URL.Query().Get("run"))
		w.WriteHeader(http.StatusNoContent)
	})
	ln := listen(t)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: liveness}
	go srv.Serve(ln) //nolint:errcheck // ends at Close
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// --- setup: node packages, chromium, the page, the relay ----------------

func requireSetup(t *testing.T) (chromium string) {
	t.Helper()
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("browser test cannot run: %s is missing: run `make browser-deps` (browser/setup.sh installs Debian's chromium)", chromium)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("browser test cannot run: node is not on PATH (Node.js 20+)")
	}
	for _, dep := range []string{"client-1.0.0", "client-0.0.59", "esbuild", "playwright-core"} {
		if _, err := os.Stat(filepath.Join("node_modules", dep, "package.json")); err != nil {
			t.Fatalf("browser test cannot run: browser/node_modules/%s is missing: run `make browser-deps` (browser/setup.sh runs npm ci from browser/package-lock.json)", dep)
		}
	}
	return chromium
}

// bundle builds the page from page/ with the pinned esbuild into dir.
func bundle(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("node", "js/bundle.js", dir).CombinedOutput(); err != nil {
		t.Fatalf("bundling the page: %v\n%s", err, out)
	}
}

func buildRelay(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "agui-relay")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the relay: %v\n%s", err, out)
	}
	return bin
}

// startRelay runs the relay binary with args on a free port and returns
// its base URL, read from its "agui-relay listening" log line.
func startRelay(t *testing.T, bin string, args ...string) string {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var logsMu sync.Mutex
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			logsMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logsMu.Unlock()
			var l struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "agui-relay listening" {
				addr <- l.Listen
			}
		}
		close(addr)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck
		cmd.Wait()         //nolint:errcheck
		if t.Failed() {
			logsMu.Lock()
			t.Logf("relay %v log:\n%s", args, logs.String())
			logsMu.Unlock()
		}
	})
	select {
	case a, ok := <-addr:
		if !ok {
			cmd.Wait() //nolint:errcheck
			logsMu.Lock()
			defer logsMu.Unlock()
			t.Fatalf("relay %v exited before listening:\n%s", args, logs.String())
		}
		return "http://" + a
	case <-time.After(liveness):
		t.Fatalf("relay %v not listening after %v", args, liveness)
		return ""
	}
}

// --- the driver ---------------------------------------------------------

// driver is js/drive.js: one headless Chromium for the whole test.
type driver struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	mu  sync.Mutex
}

func startDriver(t *testing.T, chromium string) *driver {
	t.Helper()
	cmd := exec.Command("node", "js/drive.js")
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &driver{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	d.out.Buffer(nil, 64<<20)
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() //nolint:errcheck
		select {
		case <-done:
		case <-time.After(liveness):
			cmd.Process.Kill() //nolint:errcheck
			<-done
		}
	})
	return d
}

// do sends one command and returns its answer.
func (d *driver) do(cmd map[string]any, answer any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, _ := json.Marshal(cmd)
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		return err
	}
	if !d.out.Scan() {
		return fmt.Errorf("the driver ended: %v", d.out.Err())
	}
	return json.Unmarshal(d.out.Bytes(), answer)
}

// pageResult is what the driver answers for a page.
type pageResult struct {
	Name       string
	Error      string
	Log        string
	PageErrors []string
	Requests   []request
	Report     report
}

// request is one request of the page, as DevTools saw it.
type request struct {
	URL, Method, Type string
	Status            int
	Headers           map[string]string
}

// header returns the answer's header k, whatever its case on the wire.
func (r request) header(k string) string {
	for name, v := range r.Headers {
		if strings.EqualFold(name, k) {
			return v
		}
	}
	return ""
}

// run returns the page's POST to a URL with prefix.
func (p *pageResult) post(prefix string) request {
	for _, r := range p.Requests {
		if r.Method == "POST" && strings.HasPrefix(r.URL, prefix) {
			return r
		}
	}
	return request{}
}

// report is the page's window.__report (page/page.js).
type report struct {
	Scenario string
	Log      []string
	Status   int
	Frames   []struct {
		At    float64
		Event map[string]any
	}
	Events []struct {
		At   float64
		Type string
	}
	Resolved    bool
	Error       string
	Messages    []map[string]any
	Console     []struct{ Level, Text string }
	ContentType string
	Body        string
	Comments    int // comment frames on the wire (keep-alives)
	FetchError  string
	PageError   string
}

func (r *report) frameTypes() []string {
	var types []string
	for _, f := range r.Frames {
		types = append(types, fmt.Sprint(f.Event["type"]))
	}
	return types
}

// content is the content of the page's last message of role.
func (r *report) content(role string) string {
	c := ""
	for _, m := range r.Messages {
		if m["role"] == role {
			c = fmt.Sprint(m["content"])
		}
	}
	return c
}

func (r *report) frame(typ string) map[string]any {
	for _, f := range r.Frames {
		if f.Event["type"] == typ {
			return f.Event
		}
	}
	return nil
}

// --- the test -----------------------------------------------------------

type env struct {
	d          *driver
	p          *producer
	page       string // the page's origin
	cors, bare string // the relay with CORS for the page's origin, and without
}

// open loads the page for one scenario in its own browser context, and on
// the subtest's failure saves a screenshot of its log.
func (e *env) open(t *testing.T, q url.Values) pageResult {
	t.Helper()
	name := t.Name()
	q.Set("scenario", name)
	var res pageResult
	if err := e.d.do(map[string]any{"cmd": "open", "name": name, "url": e.page + "/index.html?" + q.Encode(), "timeoutMs": liveness.Milliseconds()}, &res); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			shot := filepath.Join(t.ArtifactDir(), "page.png")
			var ans struct{ Error string }
			if err := e.d.do(map[string]any{"cmd": "shot", "name": name, "path": shot}, &ans); err != nil || ans.Error != "" {
				t.Logf("screenshot: %v %s", err, ans.Error)
			} else {
				t.Logf("screenshot of the page's log: %s", shot)
			}
			t.Logf("page log:\n%s", strings.Join(res.Report.Log, "\n")+res.Log)
		}
		var ans struct{}
		e.d.do(map[string]any{"cmd": "close", "name": name}, &ans) //nolint:errcheck
	})
	if res.Error != "" {
		t.Fatalf("page: %s (page errors %q)", res.Error, res.PageErrors)
	}
	if res.Report.PageError != "" {
		t.Fatalf("page error: %s", res.Report.PageError)
	}
	return res
}

// run loads the page for a run of client through url, on a fresh runId.
func (e *env) run(t *testing.T, client, runURL string) (pageResult, string) {
	t.Helper()
	run := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	res := e.open(t, url.Values{"mode": {"run"}, "client": {client}, "url": {runURL}, "run": {run}, "seen": {e.page + "/seen?run=" + url.QueryEscape(run)}})
	return res, run
}

// runStreamed is run for a run that must resolve, streamed as it was sent.
func (e *env) runStreamed(t *testing.T, client, runURL string) pageResult {
	t.Helper()
	res, run := e.run(t, client, runURL)
	if !res.Report.Resolved {
		t.Fatalf("runAgent rejected: %s", res.Report.Error)
	}
	e.streamed(t, res, run)
	return res
}

// streamed checks that the first event reached the page before the
// producer sent the last one: the producer holds the rest of the stream
// until the page says the first event arrived.
func (e *env) streamed(t *testing.T, res pageResult, run string) {
	t.Helper()
	e.p.mu.Lock()
	released, last := e.p.released[run], e.p.lastSent[run]
	e.p.mu.Unlock()
	if len(res.Report.Frames) == 0 {
		t.Fatal("no event reached the page")
	}
	first := time.UnixMicro(int64(res.Report.Frames[0].At * 1000))
	if !released {
		t.Errorf("the producer sent the rest of the stream after %v without the page's word that the first event had arrived", liveness)
	}
	if last.IsZero() || !first.Before(last) {
		t.Errorf("the first event reached the page at %s, not before the producer sent the last at %s", first.Format(time.StampMicro), last.Format(time.StampMicro))
	}
	t.Logf("first event at the page %s, last event sent %s (%v later)", first.Format(time.StampMicro), last.Format(time.StampMicro), last.Sub(first).Round(time.Microsecond))
}

// preflightAnswered checks that Chromium sent a preflight to the relay for
// the run and had it answered 204, and whether it reached the producer.
func (e *env) preflightAnswered(t *testing.T, res pageResult, relay, path string, byProducer bool) {
	t.Helper()
	n := 0
	for _, r := range res.Requests {
		if r.Method == "OPTIONS" && strings.HasPrefix(r.URL, relay) {
			n++
			if r.Status != http.StatusNoContent || r.header("Access-Control-Allow-Origin") != e.page {
				t.Errorf("preflight %s (%s) answered %d, headers %v", r.URL, r.Type, r.Status, r.Headers)
			}
		}
	}
	if n == 0 {
		t.Errorf("Chromium reported no preflight to %s (DevTools saw %+v)", relay, res.Requests)
	}
	if got := slices.Contains(e.p.sawRequests(), "OPTIONS "+path); got != byProducer {
		t.Errorf("the producer saw the preflight for %s: %v, want %v (its requests: %q)", path, got, byProducer, e.p.sawRequests())
	}
}

func TestBrowser(t *testing.T) {
	chromium := requireSetup(t)
	tmp := t.TempDir()
	bundle(t, tmp)
	bin := buildRelay(t, tmp)
	p := startProducer(t)
	page := startPageServer(t, tmp, p)
	p.ownOrigin = page

	// The relay with CORS for the page's origin: /v1 for 1.0 consumers,
	// /legacy for 0.0.59 ones (which declare no protocolVersion: named
	// here, so that the test does not lean on the relay's default).
	routes := filepath.Join(tmp, "routes.yaml")
	os.WriteFile(routes, []byte(fmt.Sprintf(`routes:
  - {name: v1, prefix: /v1, upstream: %q, stripPrefix: true, consumerVersion: "1.0"}
  - {name: legacy, prefix: /legacy, upstream: %q, stripPrefix: true, consumerVersion: "0.0.59"}
`, p.base, p.base)), 0o644)
	e := &env{d: startDriver(t, chromium), p: p, page: page}
	e.cors = startRelay(t, bin, "--config", routes, "--cors-allow-origins", page)
	// The relay without CORS, in front of a producer that does its own.
	e.bare = startRelay(t, bin, "--upstream", p.base+"/own-cors", "--consumer-version", "1.0")
	// The relay with CORS and keep-alives every 100ms.
	keep := startRelay(t, bin, "--config", routes, "--cors-allow-origins", page, "--keepalive", "100ms")

	// A producer silent mid-run: the page reads the relay's keep-alive
	// comments between the events, and the run completes, on either client.
	for client, route := range map[string]string{"1.0.0": "/v1", "0.0.59": "/legacy"} {
		t.Run("keep-alives-reach-"+client, func(t *testing.T) {
			res := e.runStreamed(t, client, keep+route+"/pause/v1")
			r := &res.Report
			if r.Comments < 2 {
				t.Errorf("%d comments reached the page during the producer's silence, want several", r.Comments)
			}
			if got := r.frameTypes(); len(got) != len(streams["v1"]) {
				t.Errorf("events %q", got)
			}
			if text := r.content("assistant"); text != "It is 21 °C and clear in Lisbon." {
				t.Errorf("the page's assistant message %q (messages %v)", text, r.Messages)
			}
		})
	}

	t.Run("thinking-reaches-1.0-as-reasoning", func(t *testing.T) {
		res := e.runStreamed(t, "1.0.0", e.cors+"/v1/thinking")
		r := &res.Report
		want := []string{"RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT",
			"REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
		if got := r.frameTypes(); !slices.Equal(got, want) {
			t.Errorf("events on the wire to the page %q, want %q", got, want)
		}
		if pv := r.frame("RUN_STARTED")["protocolVersion"]; pv != "1.0" {
			t.Errorf("RUN_STARTED.protocolVersion %v, want the 1.0 the relay emits", pv)
		}
		if reasoning := r.content("reasoning"); reasoning != "Lisbon is hilly; suggest trams." {
			t.Errorf("the page's reasoning message %q (messages %v)", reasoning, r.Messages)
		}
		e.preflightAnswered(t, res, e.cors, "/thinking", false)
		if post := res.post(e.cors); post.header("Access-Control-Allow-Origin") != page || !strings.Contains(post.header("Vary"), "Origin") {
			t.Errorf("the stream's headers %v, want Access-Control-Allow-Origin %q and Vary: Origin", post.Headers, page)
		}
	})

	t.Run("1.0-reaches-0.0.59-downgraded", func(t *testing.T) {
		res := e.runStreamed(t, "0.0.59", e.cors+"/legacy/v1")
		r := &res.Report
		if _, ok := r.frame("RUN_STARTED")["protocolVersion"]; ok {
			t.Errorf("RUN_STARTED to the 0.0.59 page declares protocolVersion: %v", r.frame("RUN_STARTED"))
		}
		if c := r.frame("TOOL_CALL_RESULT")["content"]; c != "21 °C, clear" {
			t.Errorf("TOOL_CALL_RESULT.content to the 0.0.59 page %#v, want the parts' text as a string", c)
		}
		if tool := r.content("tool"); tool != "21 °C, clear" {
			t.Errorf("the page's tool message %q (messages %v)", tool, r.Messages)
		}
	})

	// The control: the same stream untranslated is one the 0.0.59 page
	// cannot read, so the run above passed because of the relay.
	t.Run("1.0-untranslated-fails-0.0.59", func(t *testing.T) {
		res, _ := e.run(t, "0.0.59", e.cors+"/v1/v1")
		r := &res.Report
		if r.Resolved {
			t.Errorf("the 0.0.59 page read the 1.0 stream untranslated: the check above proves nothing")
		}
		// It failed on the stream's content, not on the way to it.
		if r.frame("TOOL_CALL_RESULT") == nil || !strings.Contains(r.Error, "content") {
			t.Errorf("the 0.0.59 page did not fail on the untranslated tool result: error %q, events %q", r.Error, r.frameTypes())
		}
		t.Logf("the 0.0.59 page on the untranslated stream: %.300s", strings.Join(strings.Fields(r.Error), " "))
	})

	t.Run("page-reads-the-relays-400", func(t *testing.T) {
		before := len(p.sawRequests())
		res := e.open(t, url.Values{"mode": {"fetch"}, "url": {e.cors + "/v1/v1"}, "run": {"problem"}})
		r := &res.Report
		if r.FetchError != "" || r.Status != http.StatusBadRequest || r.ContentType != "application/problem+json" {
			t.Fatalf("answer %d %q, fetch error %q", r.Status, r.ContentType, r.FetchError)
		}
		var problem struct {
			Type   string
			Errors []struct{ Pointer, Reason string }
		}
		if err := json.Unmarshal([]byte(r.Body), &problem); err != nil {
			t.Fatalf("problem body %q: %v", r.Body, err)
		}
		if problem.Type != "urn:agui-relay:invalid-input" || len(problem.Errors) == 0 || problem.Errors[0].Pointer != "/messages" {
			t.Errorf("problem %+v", problem)
		}
		if after := p.sawRequests()[before:]; len(after) > 0 {
			t.Errorf("the producer was contacted: %q", after)
		}
	})

	t.Run("no-cors-passes-the-agents-cors", func(t *testing.T) {
		res := e.runStreamed(t, "1.0.0", e.bare+"/v1")
		r := &res.Report
		e.preflightAnswered(t, res, e.bare, "/own-cors/v1", true)
		if post := res.post(e.bare); post.header("Access-Control-Allow-Origin") != page {
			t.Errorf("the stream's headers %v, want the producer's Access-Control-Allow-Origin %q", post.Headers, page)
		}
		if got := r.frameTypes(); len(got) != len(streams["v1"]) {
			t.Errorf("events %q", got)
		}
	})

	// Without CORS at the relay, its own problems carry none: the page
	// sees a network error, not the 400.
	t.Run("no-cors-relays-400-is-opaque", func(t *testing.T) {
		res := e.open(t, url.Values{"mode": {"fetch"}, "url": {e.bare + "/v1"}, "run": {"opaque"}})
		if r := &res.Report; r.FetchError == "" || !strings.HasPrefix(r.FetchError, "TypeError") {
			t.Errorf("the page read the relay's answer without CORS: %d %q, error %q", r.Status, r.Body, r.FetchError)
		}
	})

}
