package translate

import (
	"strings"
	"testing"
)

func TestCancelledOutcomeRefused(t *testing.T) {
	fin := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{"inputTokens":3}]}`
	out, warns := through(t, "0.0.58", Registry(), fin)
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

func TestInterruptOutcomeRefused(t *testing.T) {
	fin := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approval"}]}}`
	out, warns := through(t, "0.0.50", Registry(), fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run paused for approval or input (interrupt); @ag-ui/client 0.0.50 cannot represent it — upgrade to 0.0.54","code":"interrupted"}`)
	if got := shapes(warns); got != "RUN_FINISHED.outcome.interrupt×I" {
		t.Errorf("warnings %s", got)
	}
	out, _ = through(t, "0.0.54", Registry(), fin)
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

func TestOutcomeMembers(t *testing.T) {
	start := `{"type":"TOOL_CALL_START","toolCallId":"a","toolCallName":"f"}`
	startB := `{"type":"TOOL_CALL_START","toolCallId":"b","toolCallName":"f"}`
	result := `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"a","content":"ok"}`
	// Derivable: lossless.
	out, warns := through(t, "0.0.59", []*Step{outcomeMembers}, start, startB, result,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":["b"]}}`)
	expect(t, out[3:], `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`)
	if len(warns) != 0 {
		t.Errorf("derivable list warned: %v", warns)
	}
	// Not derivable, plus an unknown member: lossy.
	out, warns = through(t, "0.0.54", []*Step{outcomeMembers}, start, startB, result,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"pendingToolCallIds":["a","b"],"type":"success","why":"x"}}`)
	expect(t, out[3:], `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`)
	if got := shapes(warns); got != "RUN_FINISHED.outcome.pendingToolCallIds×I,RUN_FINISHED.outcome (member unknown to 0.0.54)×I" {
		t.Errorf("warnings %s", got)
	}
	// Before strict outcomes only pendingToolCallIds goes.
	out, _ = through(t, "0.0.45", []*Step{outcomeMembers},
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":[],"why":"x"}}`)
	expect(t, out, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","why":"x"}}`)
	// Malformed list: passed on.
	mal := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":[1]}}`
	out, _ = through(t, "0.0.59", []*Step{outcomeMembers}, mal)
	expect(t, out, mal)
	// Interrupt and subagent outcomes toward strict consumers.
	out, _ = through(t, "0.0.59", []*Step{outcomeMembers},
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"r","extra":1}],"note":"n"}}`,
		`{"type":"SUBAGENT_FINISHED","subagentRunId":"s","outcome":{"type":"suspended","interruptIds":["i"],"more":true}}`)
	expect(t, out,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"r","extra":1}]}}`,
		`{"type":"SUBAGENT_FINISHED","subagentRunId":"s","outcome":{"type":"suspended","interruptIds":["i"]}}`)
}

func TestRefusalMessageIsJSON(t *testing.T) {
	r := NewRun(Events, negotiate0(), negotiate0(), nil)
	b := appendRefusal(nil, r, []byte(`{"type":"RUN_FINISHED"}`), `say "hi"`, "c", "1.0")
	if !strings.Contains(string(b), `say \"hi\"`) {
		t.Errorf("not escaped: %s", b)
	}
}
