package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// cancelledOutcome refuses, for consumers older than 1.0, a run that finished
// with RUN_FINISHED.outcome {type:"cancelled"} (new in 1.0).
//
// Lossy, and a refusal: no older outcome means "cancelled". 0.0.54–0.0.59
// validate the outcome strictly and would fail their parse; older releases
// ignore the outcome and would read the run as a success. Removing the
// outcome would change the run's outcome to success, which a downgrade must
// not do, so the RUN_FINISHED becomes
// RUN_ERROR{message:"agui-relay: the run was cancelled; @ag-ui/client <T>
// cannot represent it — upgrade to 1.0", code:"cancelled"}, keeping usage
// where the consumer reads it (0.0.58+), with a warning. The event stays
// where it was: nothing is reordered.
//
// A RUN_FINISHED the consumer's own release rejects (rules.JudgeEvent for
// the consumer finds it malformed: no threadId or runId, a value of the wrong
// kind in a member it reads) is passed on as it came, not refused: the run
// fails at the consumer either way, so no success can be read into it, and a
// downgrade does not repair malformed material into a well-formed RUN_ERROR.
// A defect only in members the consumer's release does not read (usage
// before 0.0.58, the outcome before 0.0.54) does not count: the consumer
// would strip it and read a success, so the run is still refused. Nor does a
// duplicate key: the client's JSON.parse keeps the last value and its schema
// may accept the event.
//
// Reference consumer: the 1.0 client reads it as a cancelled run; the 0.0.x
// clients have no such outcome.
var cancelledOutcome = &Step{
	Name:        "cancelled-outcome",
	Description: "RUN_FINISHED with a cancelled outcome becomes a RUN_ERROR (code cancelled) that says the consumer cannot represent it",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Types:       []string{"RUN_FINISHED"},
	NewEvent: func() EventStep {
		return &refusalRun{outcome: "cancelled", code: "cancelled", what: "the run was cancelled", upgradeTo: "1.0"}
	},
}

// refusalRun refuses runs whose RUN_FINISHED outcome has one type.
type refusalRun struct {
	outcome, code, what, upgradeTo string
	buf                            []byte
}

func (f *refusalRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if o := Get(ev, "outcome"); !o.IsObject() || Sub(o, "type").Str != f.outcome {
		emit(ev)
		return
	}
	if consumerRejects(r.To, ev) {
		emit(ev) // malformed for the consumer: it fails the run itself
		return
	}
	shape := "RUN_FINISHED.outcome." + f.outcome
	r.Lost(shape, "@ag-ui/client "+r.To.String()+" cannot represent a "+f.outcome+
		" outcome and would read the run as a success or fail on it: the run was refused with RUN_ERROR code \""+f.code+"\"",
		"@ag-ui/client "+f.upgradeTo+" or newer")
	f.buf = appendRefusal(f.buf[:0], r, ev, f.what, f.code, f.upgradeTo)
	emit(f.buf)
}
