package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// interruptOutcome refuses, for consumers older than 0.0.54, a run that
// paused with RUN_FINISHED.outcome {type:"interrupt", interrupts} (new in
// 0.0.54).
//
// Lossy, and a refusal: before 0.0.54 the outcome is ignored (0.0.43–0.0.53)
// or stripped (older), so the consumer would read a run waiting for approval
// or input as a success, with no pending interrupts. Removing the outcome
// would change the run's outcome, which a downgrade must not do; so the
// RUN_FINISHED becomes RUN_ERROR{message:"agui-relay: the run paused for
// approval or input (interrupt); @ag-ui/client <T> cannot represent it —
// upgrade to 0.0.54", code:"interrupted"}, with a warning. The event stays
// where it was. (These consumers do not read usage, so it is not kept.)
// A RUN_FINISHED the consumer's release rejects (no threadId or runId...)
// is passed on as it came, as cancelled-outcome does it and for the same
// reason: the run fails at the consumer anyway, and a downgrade does not
// repair. A defect inside the outcome, which these consumers strip, does
// not count: the run is still refused.
//
// Reference consumer: 0.0.54+ expose the interrupts as pendingInterrupts.
var interruptOutcome = &Step{
	Name:        "interrupt-outcome",
	Description: "RUN_FINISHED with an interrupt outcome becomes a RUN_ERROR (code interrupted) that says the consumer cannot represent it",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 54},
	Lossy:       true,
	Types:       []string{"RUN_FINISHED"},
	NewEvent: func() EventStep {
		return &refusalRun{outcome: "interrupt", code: "interrupted",
			what: "the run paused for approval or input (interrupt)", upgradeTo: "0.0.54"}
	},
}
