package translate

import (
	"strconv"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Warning is one lossy translation, as the contract asks it to be reported:
// the shape that was lost, why, what to upgrade to keep it.
type Warning struct {
	Shape     string // "THINKING_START.title", "SUBAGENT_STARTED", …
	Why       string
	Upgrade   string
	Step      string
	Direction Direction
	From, To  negotiate.Version
	Count     int
}

// Observer receives what a run's translation did. Every translation is
// counted (lossy or not); warnings come once per shape per run, with a count,
// when the run's translation ends. Implementations must be safe for
// concurrent use by many runs.
type Observer interface {
	Translated(step *Step, shape string, from, to negotiate.Version)
	Warn(run *Run, w Warning)
}

// Run is the state one run's translation shares between its steps.
type Run struct {
	Direction Direction
	From, To  negotiate.Version
	// RunID and ThreadID identify the run once RUN_STARTED (or the input)
	// named them; they seed derived ids.
	RunID, ThreadID string

	// Stream is what the translation carries from one run of a stream to
	// the next; nil when the caller translates runs on their own (a step
	// that needs it then does nothing).
	Stream *StreamState

	// Python names the producer's Python SDK release on an input run whose
	// plan names one (negotiate.InputPlan.Python): its models' own rules
	// apply (inputPython). Zero otherwise.
	Python negotiate.PyRelease

	observer Observer
	step     *Step  // the step being applied
	typ      []byte // the type of the event being applied, borrowed from it
	warnings []Warning
	minted   int

	// hop counts the events the chain has handed on, each to the steps it
	// asks about it; top is the last read of an event's members (members).
	hop uint64
	top topRead
}

// StreamState is what one event stream's translation carries across its
// runs. Make one per stream and set it on every Run of that stream.
type StreamState struct {
	// Errored is set once a RUN_ERROR reached the consumer.
	Errored bool
}

// NewRun starts the translation state of one run. observer may be nil.
func NewRun(dir Direction, from, to negotiate.Version, observer Observer) *Run {
	return &Run{Direction: dir, From: from, To: to, observer: observer}
}

// Translated records that the current step rewrote shape. Every step calls it
// for every shape it changes, lossy or not, so that metrics show who still
// needs a translation.
func (r *Run) Translated(shape string) {
	if r.observer != nil && r.step != nil {
		r.observer.Translated(r.step, shape, r.From, r.To)
	}
}

// Lost records a lossy translation of shape: why it was lost and what to
// upgrade to keep it. The same shape is reported once per run with a count.
func (r *Run) Lost(shape, why, upgrade string) {
	r.Translated(shape)
	for i := range r.warnings {
		if r.warnings[i].Shape == shape {
			r.warnings[i].Count++
			return
		}
	}
	name := ""
	if r.step != nil {
		name = r.step.Name
		if !r.Python.IsZero() && !r.step.Python {
			upgrade += pythonUpgrade(r.step.Since)
		}
	}
	r.warnings = append(r.warnings, Warning{Shape: shape, Why: why, Upgrade: upgrade, Step: name,
		Direction: r.Direction, From: r.From, To: r.To, Count: 1})
}

// pythonUpgrade names, for a loss of a versioned input step toward a
// producer named by its Python release, the first release of ag-ui-protocol
// whose input matches the core the step's shape is new in.
func pythonUpgrade(since negotiate.Version) string {
	for _, p := range negotiate.PyProfiles {
		if p.Input.AtLeast(since) {
			return "; for this Python agent: ag-ui-protocol " + p.Release.String() + " or newer"
		}
	}
	return ""
}

// MintID derives an id the replacement shape needs and the retired one never
// carried. It is a pure function of the run and of how many ids came before
// it, so the same stream always gives the same ids.
func (r *Run) MintID(prefix string) string {
	r.minted++
	base := r.RunID
	if base == "" {
		base = "run"
	}
	return prefix + "-" + base + "-" + strconv.Itoa(r.minted)
}

// EventType returns the type of the event the current step is applying
// (rules.PeekType of it, read once by the chain), borrowed from the event.
func (r *Run) EventType() []byte { return r.typ }

// Warnings returns the lossy translations of the run so far.
func (r *Run) Warnings() []Warning { return r.warnings }

// Finish hands the run's warnings to the observer, once each, and clears
// them. Call it when the run ends (its terminal event, or the stream's end).
func (r *Run) Finish() {
	if r.observer != nil {
		for _, w := range r.warnings {
			r.observer.Warn(r, w)
		}
	}
	r.warnings = r.warnings[:0]
}
