// Package translate holds the version changes of the AG-UI protocol, one small
// documented step per change, and composes them into chains between two
// versions. A step touches only the events (or input members) it concerns;
// everything else stays the bytes it was.
package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// Kind says which way a step moves a shape.
type Kind int

const (
	// Upgrade turns a retired shape into its replacement. Upgrades are
	// triggered by the shape itself and run for every consumer that reads the
	// replacement (Since and newer).
	Upgrade Kind = iota
	// Downgrade removes or reshapes what a consumer older than Since cannot
	// read. It never invents a non-empty value, never repairs a malformed one,
	// never changes an id, the outcome or the order of events.
	Downgrade
)

func (k Kind) String() string {
	if k == Upgrade {
		return "upgrade"
	}
	return "downgrade"
}

// Direction is the way the translated material travels.
type Direction int

const (
	// Events travel from the producer to the consumer.
	Events Direction = iota
	// Input is the RunAgentInput on its way from the consumer to the producer.
	Input
)

func (d Direction) String() string {
	if d == Events {
		return "events"
	}
	return "input"
}

// EventStep is the per-run state of one event step.
type EventStep interface {
	// Apply handles one event of a type the step concerns. ev is a JSON
	// object, borrowed: valid only until Apply returns. emit passes an event
	// to the next step and may be called any number of times (0 drops the
	// event) while Apply runs, never after it returns (the chain gives
	// every step the same emit); what it is given is borrowed the same way.
	Apply(r *Run, ev []byte, emit func([]byte))
}

// Wanter is implemented by the per-run state of a step that can tell, from
// an event's type and bytes alone and cheaply, whether the event concerns
// it (a step with nil Types, which may concern any type, above all). An
// event that no step wants leaves the chain as its bytes; a step whose state
// is no Wanter is handed every event of its types.
type Wanter interface {
	Wants(r *Run, typ, ev []byte) bool
}

// Decliner is a Wanter whose state can rule out a whole event type:
// Declines(r, typ) true means Wants answers false for every event of type
// typ until the step is next applied. A chain run then does not ask it about
// those events (ChainRun.stepsOf), and asks Declines again only after the
// step's state changed (made, or applied) or the type changed.
type Decliner interface {
	Wanter
	Declines(r *Run, typ []byte) bool
}

// InputStep rewrites a whole RunAgentInput. It returns the input unchanged
// (the same slice) when nothing concerns it. It must never touch
// forwardedProps.
type InputStep func(r *Run, in []byte) []byte

// Step describes one version change in one direction.
type Step struct {
	// Name identifies the step in metrics and logs ("reasoning-to-thinking").
	Name string
	// Description is one line: what changed, and what the step does about it.
	Description string
	Kind        Kind
	Direction   Direction
	// Since is the version that introduced the shape the step concerns: a
	// downgrade runs for consumers older than Since, an upgrade for
	// consumers at Since or newer.
	Since negotiate.Version
	// Lossy is true when the step can drop or degrade content a reader would
	// have seen. Lossy steps warn; lossless ones are silent.
	Lossy bool
	// Types lists the event types an event step concerns; nil means every
	// type (such a step must filter cheaply itself).
	Types []string
	// Concerns, for a step with nil Types, says whether the step may touch
	// an event of type typ in a chain that emits for target; nil means it
	// may. The chain asks it once per type the protocol names, when it is
	// built, and offers the events of a type it declines to the other
	// steps only: what a step can tell from the type alone is data, not a
	// question asked on every event.
	Concerns func(target negotiate.Version, typ string) bool
	// Late places a downgrade after every other downgrade of the chain,
	// whatever its Since: a step that judges what the version steps left
	// against the consumer's version (unrecognised material) must see the
	// stream once they have reshaped what they can.
	Late bool
	// Python marks an input step for producers named by their Python SDK
	// release (Run.Python): it belongs in every input chain, whatever the
	// target, and does nothing on a run without one. Since is then unused.
	Python bool
	// NewEvent makes the per-run state of an event step.
	NewEvent func() EventStep
	// Input is the rewrite of an input step.
	Input InputStep
}

// Applies reports whether the step belongs in a chain that emits for target.
func (s *Step) Applies(target negotiate.Version) bool {
	if s.Python {
		return true
	}
	if s.Kind == Upgrade {
		return target.AtLeast(s.Since)
	}
	return target.Less(s.Since)
}
