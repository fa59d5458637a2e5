//go:build integration

package conformance

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTransport: a producer on the published @ag-ui/encoder 1.0.0 answers
// any Accept that allows protobuf with protobuf (curl's */* included). The
// relay, started with no flag, asks it for an event stream whenever the
// consumer can read one, whatever its Accept says besides (parameters,
// letter case, wildcards, none at all), and reads and shapes that stream; a
// consumer that accepts only the protobuf media type gets the producer's
// answer as the producer sent it, byte for byte, logged once as
// untranslated and counted.
func TestTransport(t *testing.T) {
	requireSetup(t)
	producer := startEncoderProducer(t, "encoder-1.0.0")
	relay := startRelay(t, producer.URL)
	const input = `{"threadId":"thread-conf","runId":"run-conf","protocolVersion":"1.0","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}`
	post := func(base, tag string, accept []string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", base+"/s/v1-run-error?accept="+tag, strings.NewReader(input))
		req.Header.Set("Content-Type", "application/json")
		for _, a := range accept {
			req.Header.Add("Accept", a)
		}
		res, err := http.DefaultTransport.RoundTrip(req) // no Accept of Go's own
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, b
	}
	direct, _ := post(producer.URL, "direct", []string{"*/*"})
	if direct.Header.Get("Content-Type") != "application/vnd.ag-ui.event+proto" {
		t.Fatalf("the encoder answered */* with %q: the premise of this test (it answers protobuf) no longer holds", direct.Header.Get("Content-Type"))
	}
	for i, accept := range [][]string{nil, {"*/*"}, {"text/*"}, {"text/event-stream; charset=utf-8"}, {"TEXT/Event-Stream"},
		{"application/vnd.ag-ui.event+proto", "text/event-stream;q=0.5"}} {
		var reasons []string
		tag := fmt.Sprint("sse-", i)
		res, body := post(relay.URL, tag, accept)
		if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
			reasons = append(reasons, fmt.Sprintf("answered %d %s", res.StatusCode, ct))
		}
		if !bytes.HasPrefix(body, []byte(`data: {"type":"RUN_STARTED","threadId":"thread-conf","runId":"run-conf","protocolVersion":"1.0"}`+"\n\n")) ||
			!bytes.Contains(body, []byte(`"type":"RUN_ERROR"`)) {
			reasons = append(reasons, fmt.Sprintf("not the producer's event stream: %.200q", body))
		}
		if reqs := producer.Requests(t, "/s/v1-run-error?accept="+tag); len(reqs) != 1 || reqs[0].Accept == nil || *reqs[0].Accept != "text/event-stream" {
			reasons = append(reasons, fmt.Sprintf("the producer was asked %+v, want one request with Accept: text/event-stream", reqs))
		}
		reportVia(t, fmt.Sprintf("accept=%q", strings.Join(accept, ", ")), "v1-run-error@encoder-1.0.0", "relay", reasons)
	}

	// Only protobuf: the producer's answer, untouched.
	var reasons []string
	want, wantBody := post(producer.URL, "proto-direct", []string{"application/vnd.ag-ui.event+proto"})
	res, body := post(relay.URL, "proto", []string{"application/vnd.ag-ui.event+proto"})
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != want.Header.Get("Content-Type") || !bytes.Equal(body, wantBody) || len(body) == 0 {
		reasons = append(reasons, fmt.Sprintf("answered %d %s, %d bytes; the producer answers %s, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(body), want.Header.Get("Content-Type"), len(wantBody)))
	}
	if reqs := producer.Requests(t, "/s/v1-run-error?accept=proto"); len(reqs) != 1 || reqs[0].Accept == nil || *reqs[0].Accept != "application/vnd.ag-ui.event+proto" {
		reasons = append(reasons, fmt.Sprintf("the producer was asked %+v, want the consumer's Accept", reqs))
	}
	n := 0
	for _, l := range relay.Logs() {
		if strings.Contains(l.Raw, `"msg":"run passed through untranslated"`) {
			n++
			if !strings.EqualFold(l.Level, "warn") || !strings.Contains(l.Raw, "accepts only the AG-UI protobuf encoding") {
				reasons = append(reasons, "untranslated line: "+firstLine(l.Raw))
			}
		}
	}
	if n != 1 {
		reasons = append(reasons, fmt.Sprintf("%d log lines say the run passed through untranslated, want 1", n))
	}
	if m := scrapeText(t, relay.Admin); !strings.Contains(m, `agui_relay_untranslated_runs_total{reason="protobuf",route="default"} 1`) {
		reasons = append(reasons, "agui_relay_untranslated_runs_total{reason=protobuf} is not 1")
	}
	reportVia(t, `accept="application/vnd.ag-ui.event+proto"`, "v1-run-error@encoder-1.0.0", "relay", reasons)
}

// scrapeText reads a relay's /metrics.
func scrapeText(t *testing.T, admin string) string {
	t.Helper()
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
