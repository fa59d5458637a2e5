package translate

import "testing"

func TestInterruptOutcomeRefused(t *testing.T) {
	fin := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approval"}]}}`
	out, warns := through(t, "0.0.50", []*Step{interruptOutcome}, fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run paused for approval or input (interrupt); @ag-ui/client 0.0.50 cannot represent it — upgrade to 0.0.54","code":"interrupted"}`)
	// Lossy: the interrupts themselves are what the consumer no longer sees.
	claims(t, interruptOutcome, true, warns, "RUN_FINISHED.outcome.interrupt")
	// In the whole chain, the same.
	out, warns = through(t, "0.0.50", Registry(), fin)
	expect(t, out, `{"type":"RUN_ERROR","message":"agui-relay: the run paused for approval or input (interrupt); @ag-ui/client 0.0.50 cannot represent it — upgrade to 0.0.54","code":"interrupted"}`)
	if got := shapes(warns); got != "RUN_FINISHED.outcome.interrupt×I" {
		t.Errorf("warnings %s", got)
	}
	out, _ = through(t, "0.0.54", Registry(), fin)
	expect(t, out, fin)
	// A success, or no outcome, is no concern of the step.
	for _, ev := range []string{
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
	} {
		out, warns = through(t, "0.0.50", []*Step{interruptOutcome}, ev)
		expect(t, out, ev)
		if len(warns) != 0 {
			t.Errorf("%s: warnings %s", ev, shapes(warns))
		}
	}
}
