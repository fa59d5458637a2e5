package relay

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

func TestAcceptsEventStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                 true, // no Accept: anything
		"text/event-stream":                true,
		"TEXT/Event-Stream":                true,
		"text/event-stream; charset=utf-8": true,
		"text/event-stream;q=0.5":          true,
		"text/*":                           true,
		"*/*":                              true,
		"application/json, */*;q=0.1":      true,
		"application/vnd.ag-ui.event+proto, text/event-stream": true,
		"application/vnd.ag-ui.event+proto;q=1, */*;q=0.01":    true,
		"application/vnd.ag-ui.event+proto":                    false,
		"application/vnd.ag-ui.event+proto, application/json":  false,
		"application/json":                               false,
		"text/event-stream;q=0":                          false,
		"text/event-stream; q=0.000":                     false,
		"*/*, text/event-stream;q=0":                     false, // the most specific range decides
		"text/*;q=0, */*":                                false,
		"text/*;q=0, text/event-stream":                  true,
		"text/event-stream;q=0, text/event-stream;q=0.2": true,
		"text/html, text/plain":                          false,
		" , ":                                            false,
	} {
		if got := acceptsEventStream([]byte(accept)); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}

// TestRunAsksForAnEventStream: over sockets, a run is forwarded with
// Accept: text/event-stream whenever the consumer can read one, whatever
// else it accepts (curl's */*, which a producer on @ag-ui/encoder answers
// with protobuf), and with its own Accept when it cannot.
func TestRunAsksForAnEventStream(t *testing.T) {
	asked := make(chan string, 1)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		asked <- strings.Join(r.Header.Values("Accept"), " | ")
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted, testkit.RunFinished)
	}, nil)
	for _, tc := range []struct {
		accept []string // nil: no Accept header
		want   string
	}{
		{nil, "text/event-stream"},
		{[]string{"*/*"}, "text/event-stream"},
		{[]string{"text/*"}, "text/event-stream"},
		{[]string{"Text/Event-Stream; charset=UTF-8"}, "text/event-stream"},
		{[]string{"application/vnd.ag-ui.event+proto", "*/*;q=0.1"}, "text/event-stream"},
		{[]string{"application/vnd.ag-ui.event+proto"}, "application/vnd.ag-ui.event+proto"},
		{[]string{"application/vnd.ag-ui.event+proto", "application/json"}, "application/vnd.ag-ui.event+proto | application/json"},
	} {
		req, _ := http.NewRequest("POST", h.url+"/agent", strings.NewReader(testkit.MinimalInput))
		req.Header.Set("Content-Type", "application/json")
		for _, a := range tc.accept {
			req.Header.Add("Accept", a)
		}
		resp, err := h.consumer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h.report()
		if got := <-asked; got != tc.want {
			t.Errorf("consumer Accept %q: producer asked with %q, want %q", tc.accept, got, tc.want)
		}
	}
}

// TestProtobufOnlyConsumerGetsTheResponseUntouched: a consumer that accepts
// only the AG-UI protobuf encoding gets the producer's response as it came,
// byte for byte; the run is logged once as untranslated, and its report says
// why (metrics count it: see the metrics package).
func TestProtobufOnlyConsumerGetsTheResponseUntouched(t *testing.T) {
	body := "\x00\x00\x00\x05\x0a\x03\x08\x0b\x12" + strings.Repeat("\xff", 40)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.ag-ui.event+proto")
		w.WriteHeader(200)
		io.WriteString(w, body)
	}, nil)
	req, _ := http.NewRequest("POST", h.url+"/agent", strings.NewReader(testkit.MinimalInput))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/vnd.ag-ui.event+proto")
	resp, err := h.consumer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := testkit.ReadAll(t, resp)
	rep := h.report()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.ag-ui.event+proto" || got != body {
		t.Errorf("consumer got %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	if rep.Untranslated != UntranslatedProtobuf {
		t.Errorf("report says untranslated %q", rep.Untranslated)
	}
	lines := h.logs.FilterMessage("run passed through untranslated").All()
	if len(lines) != 1 || !strings.Contains(lines[0].ContextMap()["why"].(string), "accepts only the AG-UI protobuf encoding") ||
		lines[0].ContextMap()["content_type"] != "application/vnd.ag-ui.event+proto" {
		t.Errorf("untranslated log lines %+v", lines)
	}
}
