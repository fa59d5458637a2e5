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
