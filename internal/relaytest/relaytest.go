// Package relaytest runs a Relay between a test's producer and a consumer,
// over real sockets, for the packages that plug into a relay from outside
// it (metrics, recording) and test it that way. What a producer writes and
// a consumer reads is internal/testkit's.
package relaytest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/relay"
)

// ThinkingStream is a run as a 0.0.40 producer streams it: no
// protocolVersion, THINKING_* events; with a comment, an event of a type no
// version describes and a data frame without a type.
var ThinkingStream = []string{
	": hello\n\n",
	`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}` + "\n\n",
	`data: {"type":"THINKING_START","title":"Weather question"}` + "\n\n",
	`data: {"type":"THINKING_TEXT_MESSAGE_START"}` + "\n\n",
	`data: {"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"The user asks. "}` + "\n\n",
	`data: {"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"I will answer."}` + "\n\n",
	`data: {"type":"THINKING_TEXT_MESSAGE_END"}` + "\n\n",
	`data: {"type":"THINKING_END"}` + "\n\n",
	`data: {"type":"FUTURE_EVENT","x":1}` + "\n\n",
	`data: {"notype":true}` + "\n\n",
	`data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}` + "\n\n",
	`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Sunny."}` + "\n\n",
	`data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}` + "\n\n",
	`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n",
}

// Harness is a Relay served by its Server on a loopback listener (read and
// written raw, as the serve command does), in front of a producer.
type Harness struct {
	t        *testing.T
	Relay    *relay.Relay
	Producer *httptest.Server
	// URL is the relay's base URL.
	URL      string
	consumer *http.Client
	reports  chan *relay.RunReport
}

// New starts a producer answering with producer (nil: a server that never
// gets a request, for a test that points Upstream elsewhere) and a relay in
// front of it, configured by configure (may be nil) before it serves. Each
// run's report (its Counts left out: they are borrowed) is kept for Report.
// Everything stops at the test's end.
func New(t *testing.T, producer http.HandlerFunc, configure func(*relay.Relay)) *Harness {
	t.Helper()
	h := &Harness{t: t, reports: make(chan *relay.RunReport, 16)}
	if producer == nil {
		producer = func(http.ResponseWriter, *http.Request) {}
	}
	h.Producer = httptest.NewServer(producer)
	t.Cleanup(func() { h.Producer.CloseClientConnections(); h.Producer.Close() })
	poller := relay.NewPoller() // as serve gives every Relay
	t.Cleanup(func() { poller.Close() })
	h.Relay = &relay.Relay{
		Upstream:        h.Producer.URL,
		Client:          relay.NewClient(relay.ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond}),
		Log:             zap.NewNop(),
		Poller:          poller,
		ReuseGoroutines: true,
	}
	if configure != nil {
		configure(h.Relay)
	}
	// The reports are taken at each run's end, after the taps configure set.
	tap, reports := h.Relay.Tap, reportTap{reports: h.reports}
	h.Relay.Tap = func(rep *relay.RunReport) relay.RunTap {
		if tap == nil {
			return reports
		}
		return relay.JoinTaps(tap(rep), reports)
	}
	h.URL = "http://" + testkit.Serve(t, h.Relay.Server(), relay.Listener)
	t.Cleanup(h.Relay.EndRuns)
	h.consumer = testkit.Consumer(t)
	return h
}

// reportTap sends a copy of each run's report, its Counts left out, to a
// Harness's reports at the run's end; it watches nothing else.
type reportTap struct {
	relay.NopTap
	reports chan<- *relay.RunReport
}

func (t reportTap) End(rep *relay.RunReport) {
	c := *rep
	c.Counts = nil
	t.reports <- &c
}

// Post sends body to the relay as a run's JSON, with the extra header
// name/value pairs, and returns the answer.
func (h *Harness) Post(path, body string, header ...string) *http.Response {
	h.t.Helper()
	return testkit.Post(h.t, h.consumer, h.URL+path, body, header...)
}

// Report returns the next run's report, failing the test after testkit.Liveness.
func (h *Harness) Report() *relay.RunReport {
	h.t.Helper()
	return testkit.Await(h.t, h.reports, "no run report")
}
