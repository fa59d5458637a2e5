package relay

import (
	"net/http"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// Without a tap that traces it, a run's log line carries the trace id of
// the consumer's traceparent (and no span id), so that the line and the
// consumer's trace can be joined; a refused run's line too.
func TestRunLogCarriesConsumerTraceID(t *testing.T) {
	h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted+testkit.RunFinished)
	}, nil)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tp := "00-" + trace + "-00f067aa0ba902b7-01"
	testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput, "Traceparent", tp))
	if rep := h.report(); rep.TraceID != trace || rep.SpanID != "" {
		t.Errorf("report trace %q span %q, want the consumer's trace and no span", rep.TraceID, rep.SpanID)
	}
	testkit.ReadAll(t, h.post("/agent", `{"threadId":1}`, "Traceparent", tp))
	h.report()
	testkit.ReadAll(t, h.post("/agent", testkit.MinimalInput))
	h.report()
	var lines []map[string]any
	for _, e := range h.logs.All() {
		if e.Message == "run" || e.Message == "run refused" {
			lines = append(lines, e.ContextMap())
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d run lines, want 3", len(lines))
	}
	for i, want := range []any{trace, trace, nil} {
		if got := lines[i]["trace_id"]; got != want {
			t.Errorf("line %d: trace_id %v, want %v", i, got, want)
		}
		if _, ok := lines[i]["span_id"]; ok {
			t.Errorf("line %d: a span_id without a span", i)
		}
	}
}

func TestTraceparentID(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for tp, want := range map[string]string{
		"00-" + id + "-00f067aa0ba902b7-01":                       id,
		"00-" + id + "-00f067aa0ba902b7-00":                       id, // not sampled: the same trace
		"01-" + id + "-00f067aa0ba902b7-01-more":                  id, // a later version may append
		"00-" + id + "-00f067aa0ba902b7-01-more":                  "", // version 00 may not
		"ff-" + id + "-00f067aa0ba902b7-01":                       "", // the invalid version
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "", // upper case
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "", // the invalid trace id
		"00-" + id + "-00f067aa0ba902b7":                          "",
		"00_" + id + "-00f067aa0ba902b7-01":                       "",
		"":                                                        "",
	} {
		if got := traceparentID([]byte(tp)); got != want {
			t.Errorf("traceparentID(%q) = %q, want %q", tp, got, want)
		}
	}
}
