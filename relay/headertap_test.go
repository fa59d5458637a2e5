package relay

import (
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// contextTap is a HeaderTap that reads X-Context of the consumer's request
// and sends it on to the producer in its place, marked.
type contextTap struct {
	endTap
	seen chan<- string
}

func (t contextTap) ConsumerHeaders(h *fasthttp.RequestHeader) { t.seen <- string(h.Peek("X-Context")) }
func (t contextTap) ProducerHeaders(h *fasthttp.RequestHeader) {
	h.Set("X-Context", string(h.Peek("X-Context"))+";relayed")
}

// A HeaderTap joined with other taps reads the consumer's headers and sets
// the producer's request's, in place of the copied one; a refused run is
// shown the consumer's headers and never asks for the producer's.
func TestHeaderTapCarriesContext(t *testing.T) {
	got := make(chan []string, 1)
	seen := make(chan string, 2)
	reports := make(chan *RunReport, 2)
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values("X-Context")
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted+testkit.RunFinished)
	}, func(r *Relay) {
		r.Tap = onEnd(func(*RunReport) RunTap { return contextTap{seen: seen} }, reportsTo(reports))
	})
	testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput, "X-Context", "c1"))
	if s := testkit.Await(t, seen, "no consumer headers"); s != "c1" {
		t.Errorf("the tap saw X-Context %q, want c1", s)
	}
	if v := testkit.Await(t, got, "no request"); len(v) != 1 || v[0] != "c1;relayed" {
		t.Errorf("the producer got X-Context %q, want one, c1;relayed", v)
	}
	testkit.Await(t, reports, "no run report")

	resp := h.post("/agent", `{"threadId":1}`, "X-Context", "c2")
	if testkit.ReadAll(t, resp); resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if s := testkit.Await(t, seen, "no consumer headers"); s != "c2" {
		t.Errorf("the refused run's tap saw X-Context %q, want c2", s)
	}
	testkit.Await(t, reports, "no run report")
	select {
	case v := <-got:
		t.Errorf("a refused run reached the producer with %q", v)
	default:
	}
}
