package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Events are borrowed: the relay's scanner reuses their bytes once a step
// returns. A step that keeps an id for later events must keep a copy, or a
// later decision reads whatever the buffer holds by then.
func TestStepsKeepCopiesOfIDs(t *testing.T) {
	target := negotiate.MustParse("0.0.54")
	run := NewRun(Events, negotiate.Current, target, nil)
	cr := EventChain(target, []*Step{outcomeMembers}).Start(run, negotiate.Plan{}, func(_, _ []byte) {})
	push := func(ev string) {
		buf := []byte(ev)
		cr.Push(buf)
		for i := range buf { // the scanner reuses the buffer
			buf[i] = 'x'
		}
	}
	push(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`)
	push(`{"type":"TOOL_CALL_START","toolCallId":"call-1","toolCallName":"search"}`)
	push(`{"type":"TOOL_CALL_END","toolCallId":"call-1"}`)
	push(`{"type":"TOOL_CALL_RESULT","messageId":"m1","toolCallId":"call-1","content":"ok"}`)
	// Every started call got its result: an empty pending list is the
	// derivable one, so removing it loses nothing and must not warn.
	push(`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":[]}}`)
	for _, w := range run.Warnings() {
		t.Errorf("unexpected loss: %s (%s)", w.Shape, w.Why)
	}
}
