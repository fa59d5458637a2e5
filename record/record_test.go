package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/relaytest"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

// recordedRun reads the one recording under dir.
func recordedRun(t *testing.T, dir string) (string, map[string][]byte, *RecordingMeta) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !entries[0].IsDir() || strings.HasPrefix(entries[0].Name(), ".") {
		t.Fatalf("want one recording, have %v", entries)
	}
	rd := filepath.Join(dir, entries[0].Name())
	files := map[string][]byte{}
	fs, _ := os.ReadDir(rd)
	for _, f := range fs {
		b, err := os.ReadFile(filepath.Join(rd, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name()] = b
	}
	var m RecordingMeta
	if err := json.Unmarshal(files[RecordMeta], &m); err != nil {
		t.Fatalf("meta.json: %v\n%s", err, files[RecordMeta])
	}
	return rd, files, &m
}

// replay runs a recorded producer stream through a Stream as the relay
// does (translate reads recordings the same way).
func replay(t *testing.T, producer []byte, consumer, producerConfigured negotiate.Version) []byte {
	t.Helper()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	st := (&event.Translator{}).NewStream(consumer, producerConfigured, w)
	sc := event.NewScanner(bytes.NewReader(producer), 0)
	for {
		f, err := sc.Next()
		if err != nil {
			break
		}
		if err := st.Frame(&f); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	w.Flush()
	return out.Bytes()
}

func TestRecordingOfALiveRun(t *testing.T) {
	for _, redact := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "redacted"}[redact], func(t *testing.T) {
			dir := t.TempDir()
			rc := &Recorder{Dir: dir, Redact: redact}
			m := metrics.New(metrics.Options{NoRuntime: true})
			h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
				testkit.StreamHeaders(w)
				testkit.SSE(w, relaytest.ThinkingStream...)
			}, func(r *relay.Relay) {
				r.Tap = func(rep *relay.RunReport) relay.RunTap { return relay.JoinTaps(m.Tap(rep), rc.Tap(rep)) }
			})
			input := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[{"id":"u1","role":"user","content":"Weather in Lisbon?"}],"forwardedProps":{"secret":"s3cr3t"}}`
			live := testkit.ReadAll(t, h.Post("/agent", input))
			rep := h.Report()
			rc.Close()

			_, files, meta := recordedRun(t, dir)
			for _, name := range []string{RecordReceived, RecordForwarded, RecordProducer, RecordEmitted, RecordMeta} {
				if files[name] == nil {
					t.Errorf("%s missing", name)
				}
			}
			producer := strings.Join(relaytest.ThinkingStream, "")
			if !redact {
				if string(files[RecordEmitted]) != live {
					t.Errorf("emitted.sse is not what the consumer read:\n%s\nwant\n%s", files[RecordEmitted], live)
				}
				if string(files[RecordProducer]) != producer {
					t.Errorf("producer.sse is not what the producer sent:\n%s", files[RecordProducer])
				}
				if string(files[RecordReceived]) != input || string(files[RecordForwarded]) != input {
					t.Errorf("inputs: %s / %s", files[RecordReceived], files[RecordForwarded])
				}
			} else {
				for name, b := range files {
					for _, secret := range []string{"Lisbon", "s3cr3t", "Weather question", "The user asks", "Sunny"} {
						if bytes.Contains(b, []byte(secret)) {
							t.Errorf("%s keeps %q", name, secret)
						}
					}
				}
				if string(files[RecordEmitted]) != string(RedactSSE([]byte(live))) || string(files[RecordProducer]) != string(RedactSSE([]byte(producer))) {
					t.Errorf("the redacted streams are not the redacted live streams")
				}
				for _, kept := range []string{`"runId":"r1"`, `"messageId":"m1"`, `"type":"THINKING_START"`, `"role":"assistant"`, `"delta":"xxxxxx"`} {
					if !bytes.Contains(files[RecordProducer], []byte(kept)) {
						t.Errorf("producer.sse lacks %s", kept)
					}
				}
				if string(files[RecordReceived]) != `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[{"id":"u1","role":"user","content":"xxxxxxxxxxxxxxxxxx"}],"forwardedProps":{"secret":"xxxxxx"}}` {
					t.Errorf("redacted input: %s", files[RecordReceived])
				}
			}
			// Replaying the recorded producer stream gives the recorded
			// emitted stream, byte for byte (redacted or not).
			if got := replay(t, files[RecordProducer], negotiate.Current, negotiate.Version{}); string(got) != string(files[RecordEmitted]) {
				t.Errorf("replay of producer.sse:\n%s\nwant emitted.sse:\n%s", got, files[RecordEmitted])
			}
			if meta.Format != 1 || meta.RunID != "r1" || meta.ThreadID != "t1" || meta.Status != 200 || meta.Consumer != "1.0" ||
				meta.Producer != "unknown" || meta.ProducerConfigured != "" || !meta.Streamed || !meta.Translated ||
				meta.Events != rep.Events || meta.Bytes != rep.Bytes || meta.Terminal != "RUN_FINISHED" || meta.Redacted != redact ||
				meta.Input == nil || meta.Input.Translate || len(meta.Truncated) != 0 {
				t.Errorf("meta %+v", meta)
			}
			if meta.Replay["events"] != "agui-relay translate --to 1.0 producer.sse" || meta.Replay["check"] != "agui-relay check --version 1.0 emitted.sse" ||
				meta.Replay["input"] != "agui-relay translate --input --to 1.0 --from 1.0 input.received.json" {
				t.Errorf("replay commands %q", meta.Replay)
			}
			lost := map[string]int{}
			for _, w := range meta.Warnings {
				lost[w.Shape] = w.Count
			}
			if lost["THINKING_START.title"] != 1 {
				t.Errorf("warnings %+v", meta.Warnings)
			}
			if s := rc.Stats(); s != (RecorderStats{Written: 1}) {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// A run refused before the producer is asked is recorded with its input,
// and a producer's answer that is not a stream with no .sse files.
func TestRecordingOfRunsWithoutAStream(t *testing.T) {
	dir := t.TempDir()
	rc := &Recorder{Dir: dir}
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", 500)
	}, func(r *relay.Relay) { r.Tap = rc.Tap })
	bad := `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":{}}`
	testkit.ReadAll(t, h.Post("/agent", bad))
	h.Report()
	rc.Close()
	_, files, meta := recordedRun(t, dir)
	if string(files[RecordReceived]) != bad || files[RecordForwarded] != nil || files[RecordProducer] != nil || files[RecordEmitted] != nil {
		t.Errorf("files %q", files)
	}
	if meta.Status != 400 || meta.Problem != "urn:agui-relay:invalid-input" || meta.Streamed || meta.Replay != nil ||
		strings.Join(meta.Files, " ") != "input.received.json meta.json" {
		t.Errorf("meta %+v", meta)
	}

	dir2 := t.TempDir()
	rc2 := &Recorder{Dir: dir2}
	h2 := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }, func(r *relay.Relay) { r.Tap = rc2.Tap })
	testkit.ReadAll(t, h2.Post("/agent", testkit.MinimalInput))
	h2.Report()
	rc2.Close()
	_, files, meta = recordedRun(t, dir2)
	if files[RecordForwarded] == nil || files[RecordProducer] != nil || meta.Status != 500 || meta.Streamed {
		t.Errorf("non-stream answer: files %q meta %+v", files, meta)
	}
}

// The size cap cuts a recording and says so; a run that ends after Close
// is dropped and counted; nothing stays pending.
func TestRecordingLimits(t *testing.T) {
	dir := t.TempDir()
	rc := &Recorder{Dir: dir, MaxBytes: 300}
	h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, relaytest.ThinkingStream...)
	}, func(r *relay.Relay) { r.Tap = rc.Tap })
	live := testkit.ReadAll(t, h.Post("/agent", testkit.MinimalInput))
	h.Report()
	rc.Close()
	_, files, meta := recordedRun(t, dir)
	total := 0
	for name, b := range files {
		if name != RecordMeta {
			total += len(b)
		}
	}
	// Both files are cut; which reached the cap first depends on how the
	// producer's bytes and the emitted ones interleave.
	cut := slices.Sorted(slices.Values(meta.Truncated))
	if total != 300 || strings.Join(cut, " ") != "emitted.sse producer.sse" || len(meta.Notes) == 0 || len(live) < 300 {
		t.Errorf("cut recording: %d bytes, truncated %q, notes %q", total, meta.Truncated, meta.Notes)
	}
	tap := rc.Tap(&relay.RunReport{Start: time.Now()})
	tap.Received([]byte(testkit.MinimalInput))
	tap.End(&relay.RunReport{RunID: "late"})
	if s := rc.Stats(); s != (RecorderStats{Written: 1, Dropped: 1}) {
		t.Errorf("stats %+v", s)
	}
	if n := rc.pending.Load(); n != 0 {
		t.Errorf("%d bytes still pending", n)
	}

	// A shared budget smaller than one run's material cuts too.
	rc2 := &Recorder{Dir: t.TempDir(), MaxPending: 100}
	tap = rc2.Tap(&relay.RunReport{Start: time.Now()})
	tap.Received(bytes.Repeat([]byte("x"), 150))
	if r := tap.(*recording); len(r.received) != 100 || strings.Join(r.truncated, " ") != RecordReceived {
		t.Errorf("kept %d, truncated %q", len(r.received), r.truncated)
	}
	tap.End(&relay.RunReport{RunID: "r"})
	rc2.Close()
	if n := rc2.pending.Load(); n != 0 {
		t.Errorf("%d bytes still pending", n)
	}
}

func TestRedactJSON(t *testing.T) {
	in := `{ "type":"MESSAGES_SNAPSHOT", "messages":[{"id":"m1","role":"user","name":"ana","content":[{"type":"text","text":"héllo \"you\""},{"type":"image","source":{"type":"url","value":"https://x/y.png","mimeType":"image/png"}}]},` +
		`{"id":"m2","role":"assistant","content":"","toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}],` +
		` "n": 12.5, "ok": true, "none": null, "interruptIds":["i1","i2"], "delta":[{"op":"add","path":"/a","value":"v"}] }`
	want := `{ "type":"MESSAGES_SNAPSHOT", "messages":[{"id":"m1","role":"user","name":"ana","content":[{"type":"text","text":"xxxxxxxxxxx"},{"type":"image","source":{"type":"url","value":"xxxxxxxxxxxxxxx","mimeType":"image/png"}}]},` +
		`{"id":"m2","role":"assistant","content":"","toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"xxxxxxx"}}]}],` +
		` "n": 12.5, "ok": true, "none": null, "interruptIds":["i1","i2"], "delta":[{"op":"add","path":"/a","value":"x"}] }`
	got := RedactJSON([]byte(in))
	if string(got) != want {
		t.Errorf("redacted\n%s\nwant\n%s", got, want)
	}
	if !gjson.ValidBytes(got) {
		t.Error("not JSON")
	}
	if got := RedactJSON([]byte(`not json "secret"`)); string(got) != strings.Repeat("x", 17) {
		t.Errorf("not JSON: %s", got)
	}
	stream := ": comment kept\r\n\r\nevent: x\r\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\r\ndata: \"delta\":\"hi\"}\r\n\r\n"
	if got := string(RedactSSE([]byte(stream))); got != ": comment kept\r\n\r\nevent: x\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\ndata: \"delta\":\"xx\"}\n\n" {
		t.Errorf("redacted stream %q", got)
	}
}

// TestRecordingSaysHowTheConsumerWasLearnt: meta.json names the consumer
// version of the run and how it was learnt.
func TestRecordingSaysHowTheConsumerWasLearnt(t *testing.T) {
	for input, want := range map[string][2]string{
		testkit.MinimalInput: {"1.0", "declared"},
		`{"threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[]}`: {"0.0.59", "inferred"},
	} {
		dir := t.TempDir()
		rc := &Recorder{Dir: dir}
		h := relaytest.New(t, func(w http.ResponseWriter, r *http.Request) {
			testkit.StreamHeaders(w)
			testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}`+"\n\n",
				`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`+"\n\n")
		}, func(r *relay.Relay) { r.Tap = rc.Tap })
		testkit.ReadAll(t, h.Post("/agent", input))
		h.Report()
		rc.Close()
		_, _, meta := recordedRun(t, dir)
		if meta.Consumer != want[0] || meta.ConsumerLearnt != want[1] {
			t.Errorf("%s: meta.json consumer %q consumerLearnt %q, want %q %q", input, meta.Consumer, meta.ConsumerLearnt, want[0], want[1])
		}
	}
}
