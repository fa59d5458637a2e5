// Package relaytest runs a Relay between a test's producer and a consumer,
// over real sockets, for the packages that plug into a relay from outside
// it (metrics, recording) and test it that way.
package relaytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/wire"
)

// Liveness bounds every wait of a test for the relay.
const Liveness = 10 * time.Second

// MinimalInput is the smallest RunAgentInput of a run.
const MinimalInput = `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[]}`

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
	poller := wire.NewPoller() // as serve gives every Relay
	t.Cleanup(func() { poller.Close() })
	h.Relay = &relay.Relay{
		Upstream: h.Producer.URL,
		Client:   relay.NewClient(relay.ClientOptions{MaxIdleConnDuration: 50 * time.Millisecond}),
		Log:      zap.NewNop(),
		Poller:   poller,
		OnRun: func(rep *relay.RunReport) {
			c := *rep
			c.Counts = nil
			h.reports <- &c
		},
	}
	if configure != nil {
		configure(h.Relay)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := h.Relay.Server()
	go srv.Serve(relay.Listener(ln)) //nolint:errcheck
	h.URL = "http://" + ln.Addr().String()
	tr := &http.Transport{DisableCompression: true}
	h.consumer = &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		h.Relay.EndRuns()
		ctx, cancel := context.WithTimeout(context.Background(), Liveness)
		defer cancel()
		srv.ShutdownWithContext(ctx) //nolint:errcheck
		h.Producer.CloseClientConnections()
		h.Producer.Close()
	})
	return h
}

// Post sends body to the relay as a run's JSON, with the extra header
// name/value pairs, and returns the answer.
func (h *Harness) Post(path, body string, header ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := h.consumer.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// Report returns the next run's report, failing the test after Liveness.
func (h *Harness) Report() *relay.RunReport {
	h.t.Helper()
	select {
	case r := <-h.reports:
		return r
	case <-time.After(Liveness):
		h.t.Fatal("no run report")
		return nil
	}
}

// ReadAll reads and closes the answer's body.
func ReadAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the relayed stream: %v", err)
	}
	return string(b)
}

// StreamHeaders answers as a producer's event stream begins.
func StreamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
}

// SSE writes frames as a producer does, flushing after each.
func SSE(w http.ResponseWriter, frames ...string) {
	for _, f := range frames {
		io.WriteString(w, f) //nolint:errcheck
		w.(http.Flusher).Flush()
	}
}

// ClosedURL is the URL of a port nothing listens on any more: connecting
// to it is refused.
func ClosedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}
