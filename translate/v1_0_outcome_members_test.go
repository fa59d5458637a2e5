package translate

import "testing"

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
	// Lossy where the list cannot be derived or a member goes; silent where
	// the consumer derives the same list.
	claims(t, outcomeMembers, true, warns, "RUN_FINISHED.outcome.pendingToolCallIds")
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
