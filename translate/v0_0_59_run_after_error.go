package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// runAfterError drops, for consumers older than 0.0.59, the runs that start
// after a RUN_ERROR on the same stream (0.0.59 first allowed a RUN_STARTED
// after a RUN_ERROR; older verifiers fail the whole stream on it).
//
// Lossy, with a warning counting the events dropped: the later runs never
// reach the consumer. Nothing is reordered or invented, and the run that
// errored reaches the consumer whole. The state crosses runs, so it lives in
// Run.Stream; a Run without one (a run translated on its own) is passed on.
//
// Reference consumer: ≤0.0.58 reject an event after RUN_ERROR; 0.0.59 and
// 1.0 start the next run.
var runAfterError = &Step{
	Name:        "run-after-error",
	Description: "runs that start after a RUN_ERROR on the same stream are dropped for consumers that end the stream at RUN_ERROR",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 59},
	Lossy:       true,
	// Late: it must see the stream as the consumer will, including a
	// RUN_ERROR another step made of a RUN_FINISHED it had to refuse.
	Late:     true,
	Types:    nil, // every event of a dropped run goes
	NewEvent: func() EventStep { return &runAfterErrorRun{} },
}

type runAfterErrorRun struct {
	dropping bool
	decided  bool
}

// Wants: the run's first event (it decides), every event of a dropped run,
// and a RUN_ERROR (it marks the stream).
func (a *runAfterErrorRun) Wants(r *Run, typ, _ []byte) bool {
	return r.Stream != nil && (!a.decided || a.dropping || string(typ) == "RUN_ERROR")
}

// Declines: once the run's first event decided it is not dropped, every
// type but RUN_ERROR (the content deltas of a run are never asked about);
// without a Stream, every type.
func (a *runAfterErrorRun) Declines(r *Run, typ []byte) bool {
	return r.Stream == nil || (a.decided && !a.dropping && string(typ) != "RUN_ERROR")
}

func (a *runAfterErrorRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	st := r.Stream // Wants let no event through without one
	if !a.decided {
		// The run's first event says whether it follows an error.
		a.decided = true
		a.dropping = st.Errored && string(r.EventType()) == "RUN_STARTED"
	}
	if a.dropping {
		r.Lost("RUN_STARTED after RUN_ERROR", "@ag-ui/client "+r.To.String()+" ends a stream at RUN_ERROR and fails on a later run: the later run's events were dropped",
			"@ag-ui/client 0.0.59 or newer")
		return
	}
	if string(r.EventType()) == "RUN_ERROR" {
		st.Errored = true
	}
	emit(ev)
}
