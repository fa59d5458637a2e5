package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/record"
	"github.com/agui-relay/agui-relay/rules"
)

// adminGet returns the body of a GET of url, which must answer 200.
func adminGet(t *testing.T, url string) string {
	t.Helper()
	code, body := getBody(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d", url, code)
	}
	return body
}

// metricLine finds the sample line of name whose labels include every one
// of labels (`k="v"`), and returns its value text.
func metricLine(text, name string, labels ...string) string {
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, name+"{") {
			continue
		}
		ok := true
		for _, lv := range labels {
			ok = ok && strings.Contains(l, lv)
		}
		if ok {
			return l[strings.LastIndexByte(l, ' ')+1:]
		}
	}
	return ""
}

// stopForRecording shuts a relay started by startServe down, which writes
// the recording of its one run under dir, and returns that run's directory.
func stopForRecording(t *testing.T, cancel context.CancelFunc, done <-chan error, dir string) string {
	t.Helper()
	http.DefaultClient.CloseIdleConnections() // the run's kept-alive connection would hold the shutdown up to 5 s
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("recordings: %v %v", entries, err)
	}
	return filepath.Join(dir, entries[0].Name())
}

// A run through `agui-relay serve` with --record-dir: the metrics after it,
// `versions --admin` against the running relay, and the recording replayed
// through `translate` and `check`, reproducing the live bytes.
func TestServeMetricsAndRecordingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	at, cancel, done := startServe(t, func(c *serveConfig) {
		c.recordDir = dir
		// The demo agent streams as 0.0.40 does; configured as 0.0.39 (the
		// same legacy profile), it gets its input with content flattened.
		c.producerVersion = negotiate.Version{Patch: 39}
		c.demoVersion = negotiate.Version{Patch: 40}
	})
	input := `{"threadId":"thread-1","runId":"run-1","protocolVersion":"1.0","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"Weather in Lisbon?"}]}],"tools":[],"context":[]}`
	resp := postRun(t, "http://"+at.relay+"/agent", input)
	liveBytes, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %d %v", resp.StatusCode, err)
	}
	live := string(liveBytes)
	if !strings.Contains(live, "REASONING_MESSAGE_CONTENT") || !strings.Contains(live, "RUN_FINISHED") {
		t.Fatalf("live stream:\n%s", live)
	}

	// Metrics, once the run is counted (metricsAfterRun).
	text := metricsAfterRun(t, at.admin)
	for _, c := range []struct {
		name, want string
		labels     []string
	}{
		{"agui_relay_runs_total", "1", []string{`route="default"`, `outcome="finished"`}},
		{"agui_relay_runs_active", "0", []string{`route="default"`}},
		{"agui_relay_events_total", "2", []string{`type="THINKING_TEXT_MESSAGE_CONTENT"`, `direction="from_producer"`}},
		{"agui_relay_events_total", "2", []string{`type="REASONING_MESSAGE_CONTENT"`, `direction="to_consumer"`}},
		{"agui_relay_translations_total", "1", []string{`step="thinking-to-reasoning"`, `shape="THINKING_START"`, `direction="events"`, `from="0.0.39"`, `to="1.0"`, `loss="lossless"`}},
		{"agui_relay_translations_total", "1", []string{`shape="THINKING_START.title"`, `loss="lossy"`}},
		{"agui_relay_deprecated_shape_runs_total", "1", []string{`shape="THINKING_TEXT_MESSAGE_CONTENT"`, `from="0.0.39"`, `to="1.0"`}},
		{"agui_relay_time_to_first_event_seconds_count", "1", []string{`route="default"`}},
	} {
		if got := metricLine(text, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %q, want %s", c.name, c.labels, got, c.want)
		}
	}
	if metricLine(text, "agui_relay_translations_total", `direction="input"`, `step="flatten-content-input"`, `from="1.0"`, `to="0.0.39"`) != "1" || !strings.Contains(text, "go_goroutines ") {
		t.Errorf("no input translation or no runtime metrics in\n%s", text)
	}

	// versions --admin shows the live usage next to the registry.
	code, out, errOut := runCmd(t, "", "versions", "--admin", "http://"+at.admin)
	if code != 0 {
		t.Fatalf("versions --admin: exit %d: %s", code, errOut)
	}
	wantContains(t, out, "RUNS", "needed by (route: producer -> consumer, runs)", "default: 0.0.39 -> 1.0 (1)")
	// RETIRED SHAPE, TRANSLATION STEP, RETIRED IN, EXPIRES, RUNS, then the
	// lines below.
	if e := entry(out, "THINKING_START "); strings.Fields(e)[4] != "1" || !strings.Contains(e, "needed by (route: producer -> consumer, runs): default: 0.0.39 -> 1.0 (1)") {
		t.Errorf("THINKING_START entry without its run: %s", e)
	}
	if e := entry(out, "rawEvent:null "); strings.Fields(e)[4] != "0" || strings.Contains(e, "needed by") {
		t.Errorf("rawEvent:null entry with runs: %s", e)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 100 {
			t.Errorf("versions --admin: a line of %d columns: %s", len(l), l)
		}
	}
	var rep metrics.DeprecationsReport
	if err := json.Unmarshal([]byte(adminGet(t, "http://"+at.admin+"/deprecations")), &rep); err != nil || len(rep.Deprecations) != len(rules.Deprecations()) {
		t.Errorf("/deprecations: %v %+v", err, rep)
	}
	if code, _, _ := runCmd(t, "", "versions", "--admin", "http://127.0.0.1:1"); code != 1 {
		t.Errorf("versions --admin against nothing: exit %d", code)
	}

	rd := stopForRecording(t, cancel, done, dir)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(rd, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("emitted.sse") != live {
		t.Errorf("emitted.sse is not what the consumer read")
	}
	if read("input.received.json") != input {
		t.Errorf("input.received.json: %s", read("input.received.json"))
	}
	var meta record.RecordingMeta
	if err := json.Unmarshal([]byte(read("meta.json")), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.ProducerConfigured != "0.0.39" || meta.Consumer != "1.0" || meta.Input == nil || !meta.Input.Translate {
		t.Errorf("meta %+v", meta)
	}
	// The replay commands of meta.json, run in the recording's directory.
	cmd := func(line string) (int, string, string) {
		t.Helper()
		args := strings.Fields(line)
		if len(args) < 2 || args[0] != "agui-relay" {
			t.Fatalf("replay command %q", line)
		}
		last := len(args) - 1
		args[last] = filepath.Join(rd, args[last])
		return runCmd(t, "", args[1:]...)
	}
	if meta.Replay["events"] != "agui-relay translate --to 1.0 --from 0.0.39 producer.sse" {
		t.Errorf("events replay %q", meta.Replay["events"])
	}
	code, out, errOut = cmd(meta.Replay["events"])
	if code != 0 || out != live {
		t.Errorf("translate producer.sse: exit %d, %s\n%s\nwant\n%s", code, errOut, out, live)
	}
	code, out, _ = cmd(meta.Replay["check"])
	if code != 0 || !strings.Contains(out, "RUN_FINISHED") {
		t.Errorf("check emitted.sse: exit %d\n%s", code, out)
	}
	forwarded := read("input.forwarded.json")
	if forwarded == input {
		t.Fatal("the input was not translated for the 0.0.39 producer")
	}
	code, out, errOut = cmd(meta.Replay["input"])
	if code != 0 || out != forwarded {
		t.Errorf("translate --input input.received.json: exit %d %s\n%s\nwant\n%s", code, errOut, out, forwarded)
	}
	code, _, _ = runCmd(t, "", "check", "--input", "--version", "1.0", filepath.Join(rd, "input.received.json"))
	if code != 0 {
		t.Errorf("check --input input.received.json: exit %d", code)
	}
}

func TestServeRecordFlags(t *testing.T) {
	c, err := parseServe([]string{"--record-dir", "/tmp/x", "--record-redact"}, func(k string) string {
		if k == "AGUI_RELAY_RECORD_MAX_BYTES" {
			return "1MiB"
		}
		return ""
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.recordDir != "/tmp/x" || !c.recordRedact || c.recordMaxBytes != 1<<20 {
		t.Errorf("config %+v", c)
	}
	if c, _ := parseServe(nil, func(string) string { return "" }, io.Discard); c.recordDir != "" || c.recordRedact || c.recordMaxBytes != 16<<20 {
		t.Errorf("defaults %+v", c)
	}
}

// A run whose producer pauses between events, through `agui-relay serve`
// with --keepalive shorter than the pauses and --record-dir: the consumer
// reads the relay's keep-alives between the events, emitted.sse keeps them
// as written, and the metrics count them as comments written.
func TestServeRecordsKeepAlives(t *testing.T) {
	dir := t.TempDir()
	at, cancel, done := startServe(t, func(c *serveConfig) {
		c.recordDir = dir
		c.demoPace = 40 * time.Millisecond // the demo agent's silence between events
		c.keepAlive = 5 * time.Millisecond
	})
	resp := postRun(t, "http://"+at.relay+"/agent", `{"threadId":"thread-1","runId":"run-1","protocolVersion":"1.0","messages":[],"tools":[],"context":[]}`)
	liveBytes, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %d %v", resp.StatusCode, err)
	}
	live := string(liveBytes)
	n := strings.Count(live, "\n\n: keep-alive\n\n")
	if n == 0 || !strings.HasSuffix(live, "\n\n") || !strings.Contains(live, "RUN_FINISHED") {
		t.Fatalf("no keep-alive between the events of the live stream:\n%s", live)
	}
	text := metricsAfterRun(t, at.admin)
	// The comments written are the producer's, relayed, and the keep-alives.
	written, _ := strconv.Atoi(metricLine(text, "agui_relay_events_total", `type="comment"`, `direction="to_consumer"`))
	read, _ := strconv.Atoi(metricLine(text, "agui_relay_events_total", `type="comment"`, `direction="from_producer"`))
	if keepAlives := strings.Count(live, ": keep-alive\n\n"); written-read != keepAlives {
		t.Errorf("comments counted: %d written, %d read from the producer; the consumer read %d keep-alives", written, read, keepAlives)
	}
	rd := stopForRecording(t, cancel, done, dir)
	emitted, err := os.ReadFile(filepath.Join(rd, "emitted.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if string(emitted) != live {
		t.Errorf("emitted.sse is not what the consumer read:\n%s\nwant\n%s", emitted, live)
	}
}

// metricsAfterRun returns a scrape of admin's /metrics taken after the
// one that first counted a finished run: the run's report comes after the
// last byte the consumer reads, and a scrape gathers one collector after
// another, so the scrape that first sees runs_total may have read the other
// counters before the report reached them; one that starts after it sees
// all of the report (runs_total is counted last). It polls every 10 ms, 10 s
// at most: only a bug makes it long.
func metricsAfterRun(t *testing.T, admin string) string {
	t.Helper()
	for range 1000 {
		if metricLine(adminGet(t, "http://"+admin+"/metrics"), "agui_relay_runs_total", `outcome="finished"`) != "" {
			return adminGet(t, "http://"+admin+"/metrics")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no finished run counted on /metrics after 10s")
	return ""
}
