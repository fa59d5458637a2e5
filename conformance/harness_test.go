//go:build integration

package conformance

// The harness: the relay binary (built once), a test producer serving
// recorded streams, relay processes per consumer configuration, and the Node
// runner that drives one published client release over many cases in one
// process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	confDir    string // this directory
	repoRoot   string
	streamsDir string
	corpusDir  string
	relayBin   string
	nodeBin    string
	setupErr   error // why the suite cannot run; every test that needs Node fails with it
	relayErr   error // why the relay cannot be built; every test fails with it
)

// Consumers are the published client releases driven through the relay: one
// per legacy profile and in-profile step (legacy-profiles.md §6.0), and 1.0.
var Consumers = []string{
	"0.0.40", "0.0.44", "0.0.45", "0.0.48", "0.0.49", "0.0.50",
	"0.0.53", "0.0.54", "0.0.58", "0.0.59", "1.0.0",
}

func TestMain(m *testing.M) {
	code := func() int {
		tmp, err := os.MkdirTemp("", "agui-conformance-")
		if err != nil {
			relayErr, setupErr = err, err
			return m.Run()
		}
		defer os.RemoveAll(tmp)
		relayErr = setupRelay(tmp)
		setupErr = relayErr
		if setupErr == nil {
			setupErr = setup()
		}
		code := m.Run()
		printSummary()
		return code
	}()
	os.Exit(code)
}

// setupRelay finds the repository the relay is built from, into tmp.
func setupRelay(tmp string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	confDir = wd
	repoRoot = filepath.Dir(wd)
	relayBin = filepath.Join(tmp, "agui-relay")
	return nil
}

// setup checks what the tests that drive the published clients need: the
// recorded corpus, Node.js and the packages of package-lock.json.
func setup() error {
	var err error
	streamsDir = filepath.Join(repoRoot, "testdata", "streams")
	corpusDir = filepath.Join(repoRoot, "testdata", "corpus", "agui-benchmark")
	if p := os.Getenv("AGUI_CORPUS_DIR"); p != "" {
		corpusDir = p
	}
	if _, err := os.Stat(corpusDir); err != nil {
		return fmt.Errorf("the recorded corpus is missing: %v (testdata/README.md says how to restore it)", err)
	}
	nodeBin, err = exec.LookPath("node")
	if err != nil {
		return errors.New("node is not on PATH: the conformance suite drives the published @ag-ui/client releases and needs Node.js 20+")
	}
	for _, dep := range []string{"client-1.0.0", "core-1.0.0", "client-0.0.40", "encoder-1.0.0", "encoder-0.0.45", "@copilotkit/runtime", "@copilotkit/core"} {
		if _, err := os.Stat(filepath.Join(confDir, "node_modules", dep, "package.json")); err != nil {
			return fmt.Errorf("conformance/node_modules/%s is missing: run `make conformance-deps` (or `conformance/setup.sh`, which runs `npm ci` from conformance/package-lock.json)", dep)
		}
	}
	return nil
}

var (
	buildOnce sync.Once
	buildErr  error
)

// requireRelay builds the relay binary once (the first test that needs it
// pays for it) and fails the test when it does not build. It needs no
// Node: the tests against other real peers (nginx, Python) use it alone.
func requireRelay(t *testing.T) {
	t.Helper()
	if relayErr != nil {
		t.Fatalf("conformance suite cannot run: %v", relayErr)
	}
	buildOnce.Do(func() {
		if bin := os.Getenv("AGUI_RELAY_BIN"); bin != "" {
			relayBin = bin // a prebuilt binary (for bisecting); CI builds from the tree
			return
		}
		build := exec.Command("go", "build", "-o", relayBin, ".")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the relay failed: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

func requireSetup(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("conformance suite cannot run: %v", setupErr)
	}
}

// --- results ----------------------------------------------------------------

type pairResult struct {
	consumer, producer string
	verdict            string // PASS, FAIL, NOT-SERVED
	reasons            []string
}

var (
	resultsMu sync.Mutex
	results   []pairResult
)

// report records and prints one line per pair.
func report(t *testing.T, consumer, producer string, reasons []string) {
	t.Helper()
	reportVia(t, consumer, producer, "relay", reasons)
}

// reportVia is report for a pair run some other way than through the relay
// (via=direct: the client read the producer itself).
func reportVia(t *testing.T, consumer, producer, via string, reasons []string) {
	t.Helper()
	r := pairResult{consumer: consumer, producer: producer, verdict: "PASS", reasons: reasons}
	if len(reasons) > 0 {
		r.verdict = "FAIL"
	}
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
	line := fmt.Sprintf("%s consumer=%s producer=%s", r.verdict, consumer, producer)
	if via != "relay" {
		line += " via=" + via
	}
	if len(reasons) > 0 {
		line += " " + strings.Join(reasons, "; ")
		t.Error(line)
	}
	fmt.Println(line)
}

func reportNotServed(consumer, producer, why string) {
	resultsMu.Lock()
	results = append(results, pairResult{consumer: consumer, producer: producer, verdict: "NOT-SERVED", reasons: []string{why}})
	resultsMu.Unlock()
	fmt.Printf("NOT-SERVED consumer=%s producer=%s %s\n", consumer, producer, why)
}

func printSummary() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	passed, failed, notServed := 0, 0, 0
	for _, r := range results {
		switch r.verdict {
		case "PASS":
			passed++
		case "FAIL":
			failed++
		default:
			notServed++
		}
	}
	if notServed > 0 {
		fmt.Printf("%d pairs not served (listed above with the reason)\n", notServed)
	}
	fmt.Printf("%d passed, %d failed\n", passed, failed)
}

// --- producer ---------------------------------------------------------------

// Producer serves testdata/streams/<name>.sse at /s/<name> and corpus streams
// at /corpus/<agent>/<prompt>, and records every request body it received.
type Producer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][][]byte
}

func startProducer(t *testing.T) *Producer {
	p := &Producer{bodies: map[string][][]byte{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *Producer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies[r.URL.RequestURI()] = append(p.bodies[r.URL.RequestURI()], body)
	p.mu.Unlock()
	var file string
	switch {
	case strings.Contains(r.URL.Path, ".."):
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	case strings.HasPrefix(r.URL.Path, "/s/"):
		file = filepath.Join(streamsDir, strings.TrimPrefix(r.URL.Path, "/s/")+".sse")
	case strings.HasPrefix(r.URL.Path, "/corpus/"):
		file = filepath.Join(corpusDir, strings.TrimPrefix(r.URL.Path, "/corpus/")+".sse")
	default:
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// Bodies returns the request bodies received at uri (path and query).
func (p *Producer) Bodies(uri string) [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.bodies[uri]...)
}

// --- relay ------------------------------------------------------------------

// Relay is one relay process.
type Relay struct {
	URL string
	// Admin is its admin server's base URL (/metrics).
	Admin string
	cmd   *exec.Cmd
	logs  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePorts returns n loopback addresses that were free a moment ago, all
// different: each is held until all are found (one freed at once may be
// handed out again by the next).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// startProcess starts cmd and, when the test ends, kills it, waits for it
// and calls ended (nil: nothing). The channel is closed once it has exited
// (cmd.ProcessState says how).
func startProcess(t *testing.T, cmd *exec.Cmd, ended func()) <-chan struct{} {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if ended != nil {
			ended()
		}
	})
	return exited
}

// startRelay runs `agui-relay serve` in front of upstream with extra flags
// and waits until /readyz answers 200.
func startRelay(t *testing.T, upstream string, flags ...string) *Relay {
	t.Helper()
	r, exitMsg := tryStartRelay(t, upstream, flags...)
	if r == nil {
		t.Fatal(exitMsg)
	}
	return r
}

// tryStartRelay is startRelay for a configuration the relay may refuse: it
// returns nil and why when the process exits before it is ready.
func tryStartRelay(t *testing.T, upstream string, flags ...string) (*Relay, string) {
	t.Helper()
	requireRelay(t)
	ports := freePorts(t, 2)
	listen, admin := ports[0], ports[1]
	args := append([]string{"serve", "--listen", listen, "--admin-listen", admin,
		"--upstream", upstream, "--log-format", "json"}, flags...)
	r := &Relay{URL: "http://" + listen, Admin: "http://" + admin, logs: &lockedBuffer{}}
	r.cmd = exec.Command(relayBin, args...)
	r.cmd.Stderr = r.logs
	r.cmd.Stdout = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting the relay: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Sprintf("relay %v exited before it was ready (%v); its output:\n%s", args, err, r.logs.String())
		default:
		}
		res, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return r, ""
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay %v not ready after 15s; its output:\n%s", args, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LogLine is one JSON log entry of the relay.
type LogLine struct {
	Level string
	At    time.Time
	Raw   string
}

// Logs parses the relay's JSON log lines (non-JSON lines are kept with an
// empty level).
func (r *Relay) Logs() []LogLine {
	var out []LogLine
	sc := bufio.NewScanner(strings.NewReader(r.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			out = append(out, LogLine{Raw: line})
			continue
		}
		l := LogLine{Raw: line}
		l.Level, _ = m["level"].(string)
		l.At = logTime(m["ts"])
		if l.At.IsZero() {
			l.At = logTime(m["time"])
		}
		out = append(out, l)
	}
	return out
}

func logTime(v any) time.Time {
	switch t := v.(type) {
	case float64:
		sec := int64(t)
		return time.Unix(sec, int64((t-float64(sec))*1e9))
	case string:
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return logTime(f)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700"} {
			if ts, err := time.Parse(layout, t); err == nil {
				return ts
			}
		}
	}
	return time.Time{}
}

// --- node runner ------------------------------------------------------------

// Case is one runAgent call for the runner (js/runner.js).
type Case struct {
	Name       string         `json:"name"`
	URL        string         `json:"url"`
	Agent      map[string]any `json:"agent,omitempty"`
	Params     map[string]any `json:"params,omitempty"`
	CaptureRaw bool           `json:"captureRaw,omitempty"`
	Validate   string         `json:"validateRaw,omitempty"`
	TimeoutMs  int            `json:"timeoutMs,omitempty"`
}

// Outcome is what the runner reports for one case.
type Outcome struct {
	Name              string            `json:"name"`
	Resolved          bool              `json:"resolved"`
	Error             string            `json:"error"`
	Messages          []any             `json:"messages"`
	State             any               `json:"state"`
	Result            any               `json:"result"`
	PendingInterrupts *[]any            `json:"pendingInterrupts"`
	RunErrors         []any             `json:"runErrors"`
	Warnings          []ConsoleLine     `json:"warnings"`
	Sent              []string          `json:"sent"`
	StartedAt         int64             `json:"startedAt"`
	EndedAt           int64             `json:"endedAt"`
	Raw               []json.RawMessage `json:"raw"`
	RawInvalid        []any             `json:"rawInvalid"`
}

type ConsoleLine struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// runClient runs cases with one published client release, in one node process.
func runClient(t *testing.T, version string, cases []Case) []Outcome {
	t.Helper()
	return runScript(t, "runner.js", []string{version}, cases)
}

// runScript runs cases with a driver of js/ (runner.js, copilotkit.js) in
// one node process; each answers one Outcome per case.
func runScript(t *testing.T, script string, args []string, cases []Case) []Outcome {
	t.Helper()
	out, err := tryScript(t, script, args, cases)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryScript is runScript for a driver that may fail (a client that throws
// out of its run kills it): its error says why, with the driver's stderr.
func tryScript(t *testing.T, script string, args []string, cases []Case) ([]Outcome, error) {
	t.Helper()
	version := strings.Join(append([]string{script}, args...), " ")
	in, err := json.Marshal(cases)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, append([]string{filepath.Join("js", script)}, args...)...)
	cmd.Dir = confDir
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "SUPPRESS_TRANSFORMATION_WARNINGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s failed: %v\n%s", version, err, stderr.String())
	}
	var out []Outcome
	dec := json.NewDecoder(&stdout)
	for {
		var o Outcome
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: bad output: %v", version, err)
		}
		out = append(out, o)
	}
	if len(out) != len(cases) {
		return nil, fmt.Errorf("%s answered %d of %d cases\n%s", version, len(out), len(cases), stderr.String())
	}
	return out, nil
}

// validate runs js/validate.js over jobs.
type ValidateJob struct {
	Name string `json:"name"`
	Core string `json:"core"`
	Kind string `json:"kind"`
	Docs []any  `json:"docs"`
}

type ValidateResult struct {
	Name    string `json:"name"`
	Results []struct {
		OK     bool             `json:"ok"`
		Issues []map[string]any `json:"issues"`
		Parsed map[string]any   `json:"parsed"`
	} `json:"results"`
}

func validate(t *testing.T, jobs []ValidateJob) map[string]ValidateResult {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"jobs": jobs})
	cmd := exec.Command(nodeBin, filepath.Join("js", "validate.js"))
	cmd.Dir = confDir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("validate.js failed: %v\n%s", err, stderr.String())
	}
	out := map[string]ValidateResult{}
	dec := json.NewDecoder(&stdout)
	for {
		var r ValidateResult
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("validate.js: bad output: %v", err)
		}
		out[r.Name] = r
	}
	return out
}
