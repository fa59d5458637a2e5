package translate

import (
	"strings"
	"testing"
)

func TestCancelledOutcomeRefused(t *testing.T) {
	fin := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{"inputTokens":3}]}`
	out, warns := through(t, "0.0.58", []*Step{cancelledOutcome}, fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run was cancelled; @ag-ui/client 0.0.58 cannot represent it — upgrade to 1.0","code":"cancelled","usage":[{"inputTokens":3}]}`)
	// Lossy: the consumer reads an error where the run was cancelled.
	claims(t, cancelledOutcome, true, warns, "RUN_FINISHED.outcome.cancelled")
	out, warns = through(t, "0.0.58", Registry(), fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run was cancelled; @ag-ui/client 0.0.58 cannot represent it — upgrade to 1.0","code":"cancelled","usage":[{"inputTokens":3}]}`)
	if got := shapes(warns); got != "RUN_FINISHED.outcome.cancelled×I" {
		t.Errorf("warnings %s", got)
	}
	// usage only for consumers that read it.
	out, _ = through(t, "0.0.45", Registry(), fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run was cancelled; @ag-ui/client 0.0.45 cannot represent it — upgrade to 1.0","code":"cancelled"}`)
	// A 1.0 consumer reads it.
	out, _ = through(t, "1.0", Registry(), fin)
	expect(t, out, fin)
}

// A RUN_FINISHED the consumer's release rejects (no threadId or runId, a
// runId that is not a string, a malformed usage it reads)
// fails the run at the consumer whatever its outcome: it is passed
// on as it came, neither refused nor rewritten.
func TestRefusalPassesEventTheConsumerRejects(t *testing.T) {
	for _, c := range []struct{ target, ev string }{
		{"0.0.54", `{"type":"RUN_FINISHED","outcome":{"type":"cancelled"}}`}, // the fuzz crasher
		{"0.0.45", `{"type":"RUN_FINISHED","outcome":{"type":"cancelled"}}`},
		{"0.0.45", `{"type":"RUN_FINISHED","threadId":"t","runId":7,"outcome":{"type":"cancelled"}}`},
		// usage is read from 0.0.58 on: a malformed one fails the run there.
		{"0.0.58", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":"lots"}`},
		{"0.0.50", `{"type":"RUN_FINISHED","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approval"}]}}`},
	} {
		out, warns := through(t, c.target, Registry(), c.ev)
		expect(t, out, c.ev)
		if len(warns) != 0 {
			t.Errorf("%s %s: warnings %s", c.target, c.ev, shapes(warns))
		}
	}
}

// A well-formed cancelled or interrupt outcome, or one whose only defect
// lies in material the consumer's release strips (and so would read as a
// success), is still refused.
func TestRefusalDespiteDefectTheConsumerStrips(t *testing.T) {
	cancelled := func(target string) string {
		return `{"type":"RUN_ERROR","message":"agui-relay: the run was cancelled; @ag-ui/client ` + target +
			` cannot represent it — upgrade to 1.0","code":"cancelled"}`
	}
	interrupted := `{"type":"RUN_ERROR","message":"agui-relay: the run paused for approval or input (interrupt); @ag-ui/client 0.0.50 cannot represent it — upgrade to 0.0.54","code":"interrupted"}`
	for _, c := range []struct{ target, ev, want string }{
		{"0.0.54", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`, cancelled("0.0.54")},
		{"0.0.45", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`, cancelled("0.0.45")},
		// usage is unknown before 0.0.58, and malformed for 1.0.
		{"0.0.54", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":"lots"}`, cancelled("0.0.54")},
		{"0.0.45", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{"inputTokens":-1}]}`, cancelled("0.0.45")},
		// The client's JSON.parse keeps the last of two equal keys.
		{"0.0.45", `{"type":"RUN_FINISHED","threadId":"t","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`, cancelled("0.0.45")},
		// The outcome itself is stripped before 0.0.54: its interrupts are not judged.
		{"0.0.50", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}`, interrupted},
	} {
		out, warns := through(t, c.target, Registry(), c.ev)
		expect(t, out, c.want)
		if len(warns) != 1 {
			t.Errorf("%s %s: warnings %s", c.target, c.ev, shapes(warns))
		}
	}
}

func TestRefusalMessageIsJSON(t *testing.T) {
	r := NewRun(Events, negotiate0(), negotiate0(), nil)
	b := appendRefusal(nil, r, []byte(`{"type":"RUN_FINISHED"}`), `say "hi"`, "c", "1.0")
	if !strings.Contains(string(b), `say \"hi\"`) {
		t.Errorf("not escaped: %s", b)
	}
}
