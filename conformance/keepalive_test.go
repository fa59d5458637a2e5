//go:build integration

package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// keepAliveSilence is how long the producer of TestKeepAlives falls
// silent mid-run: several of the relay's keep-alive intervals (--keepalive
// 100ms), so that the consumer reads several comments inside the run.
const keepAliveSilence = 700 * time.Millisecond

// keepAliveText is what the producer says after its silence: a consumer
// that shows it read the run to its end.
const keepAliveText = "after the silence"

// silentProducerFor answers every run with a 1.0 stream that falls silent
// for silence after the message's start, then ends the run; the run's ids
// are the input's.
func silentProducerFor(t *testing.T, silence time.Duration) *httptest.Server {
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ ThreadID, RunID string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		ids := fmt.Sprintf(`"threadId":%q,"runId":%q`, in.ThreadID, in.RunID)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		send := func(events ...string) {
			for _, ev := range events {
				fmt.Fprintf(w, "data: %s\n\n", ev)
			}
			w.(http.Flusher).Flush()
		}
		send(`{"type":"RUN_STARTED",`+ids+`}`, `{"type":"TEXT_MESSAGE_START","messageId":"m-ka","role":"assistant"}`)
		select {
		case <-time.After(silence): // the agent thinks
		case <-r.Context().Done():
			return
		}
		send(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-ka","delta":"`+keepAliveText+`"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m-ka"}`, `{"type":"RUN_FINISHED",`+ids+`}`)
	}))
	t.Cleanup(p.Close)
	return p
}

// keepAliveCase is one run against the silent producer through relay.
func keepAliveCase(relay *Relay, consumer string) Case {
	return Case{
		Name:      "keepalive",
		URL:       relay.URL + "/ka?consumer=" + consumer,
		Agent:     map[string]any{"threadId": "thread-ka", "initialMessages": []any{}},
		Params:    map[string]any{"runId": "run-ka", "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{}},
		TimeoutMs: 20000,
	}
}

// keepAlivesWritten reads from a relay's metrics how many comments it
// wrote to its consumers: its keep-alives (the producer sends none).
func keepAlivesWritten(t *testing.T, relay *Relay) int {
	m := regexp.MustCompile(`agui_relay_events_total\{direction="to_consumer",route="default",type="comment"\} (\d+)`).FindStringSubmatch(scrapeText(t, relay.Admin))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// checkKeepAliveRun checks that a consumer completed the run through the
// keep-alives: resolved, no RUN_ERROR, the text sent after the silence
// shown; and that the relay wrote keep-alives during it.
func checkKeepAliveRun(t *testing.T, o Outcome, relay *Relay) []string {
	var reasons []string
	if !o.Resolved || len(o.RunErrors) > 0 {
		reasons = append(reasons, fmt.Sprintf("the run did not complete: resolved %v, error %q, run errors %s", o.Resolved, o.Error, short(o.RunErrors)))
	}
	if msgs, _ := json.Marshal(o.Messages); !strings.Contains(string(msgs), keepAliveText) {
		reasons = append(reasons, fmt.Sprintf("the message sent after the silence is not shown: %.300s", msgs))
	}
	if n := keepAlivesWritten(t, relay); n < 2 {
		reasons = append(reasons, fmt.Sprintf("the relay wrote %d keep-alives during the silence, want several", n))
	}
	return reasons
}

// keepAliveOnlyConsumers are the releases the relay serves that the matrix
// does not drive (each shares its legacy profile with 0.0.40): installed for
// the keep-alives, which every release the relay serves must read.
var keepAliveOnlyConsumers = []string{"0.0.37", "0.0.38", "0.0.39"}

// TestKeepAlives: a producer falls silent in the middle of a run, long
// enough for the relay (--keepalive 100ms) to write its consumer several
// keep-alive comments; every published consumer completes the run all the
// same: each @ag-ui/client release, and CopilotKit 1.75 (its runtime's
// HttpAgent, @ag-ui/client 0.0.59, reading the relay, CopilotKitCore in
// front of the runtime). None needs keep-alives withheld.
func TestKeepAlives(t *testing.T) {
	requireSetup(t)
	producer := silentProducerFor(t, keepAliveSilence)
	t.Run("clients", func(t *testing.T) {
		for _, c := range append(keepAliveOnlyConsumers[:len(keepAliveOnlyConsumers):len(keepAliveOnlyConsumers)], Consumers...) {
			t.Run("consumer="+c, func(t *testing.T) {
				t.Parallel()
				flags := []string{"--keepalive", "100ms"}
				if c != "1.0.0" && c != inferredConsumer {
					flags = append(flags, "--consumer-version", c)
				}
				relay := startRelay(t, producer.URL, flags...)
				o := runClient(t, c, []Case{keepAliveCase(relay, c)})[0]
				report(t, c, "keepalive-silence", checkKeepAliveRun(t, o, relay))
			})
		}
	})
	t.Run("copilotkit", func(t *testing.T) {
		relay := startRelay(t, producer.URL, "--keepalive", "100ms")
		o := runScript(t, "copilotkit.js", nil, []Case{keepAliveCase(relay, "copilotkit")})[0]
		report(t, "copilotkit-1.75", "keepalive-silence", checkKeepAliveRun(t, o, relay))
	})
}
