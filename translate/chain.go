package translate

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Chain is the ordered list of event steps between a producer and a consumer
// version: upgrades of retired shapes first (oldest change first), then
// downgrades from the newest change down to the consumer's version. It is
// built once per target and shared; per-run state lives in ChainRun.
type Chain struct {
	Steps []*Step
	// byType lists, per event type a step names in Types or the protocol
	// names (rules.EventTypes), the steps that may touch an event of it, in
	// chain order: those that name it and those with nil Types, which may
	// concern any event, unless their Concerns declines the type. anyType,
	// every step with nil Types, is the list of a type not in byType. The
	// lists are the steps' Types as data: an event is offered to the steps
	// of its type's list, no other.
	byType  map[string][]int
	anyType []int
}

// EventChain builds the chain that shapes events for target from the
// registry's steps (see Registry).
func EventChain(target negotiate.Version, steps []*Step) *Chain {
	c := &Chain{byType: map[string][]int{}, Steps: order(Events, target, steps)}
	for _, v := range []negotiate.Version{negotiate.Current, target} {
		for _, t := range rules.EventTypes(v) {
			c.byType[t] = nil
		}
	}
	for _, s := range c.Steps {
		for _, t := range s.Types {
			c.byType[t] = nil
		}
	}
	for i, s := range c.Steps {
		if s.Types == nil {
			c.anyType = append(c.anyType, i)
		}
		for t, list := range c.byType {
			named := slices.Contains(s.Types, t)
			if named || (s.Types == nil && (s.Concerns == nil || s.Concerns(target, t))) {
				c.byType[t] = append(list, i)
			}
		}
	}
	return c
}

// stepsFor returns the steps that may touch an event of type typ, in chain
// order.
func (c *Chain) stepsFor(typ []byte) []int {
	if list, ok := c.byType[string(typ)]; ok {
		return list
	}
	return c.anyType
}

// Concerns reports whether any step of the chain may touch an event of type
// typ. When it does not, the event's bytes are forwarded as they are.
func (c *Chain) Concerns(typ []byte) bool { return len(c.stepsFor(typ)) > 0 }

// ChainRun is a chain applied to one run.
type ChainRun struct {
	Run   *Run
	chain *Chain
	// Each step's part of the run, by the step's index in the chain.
	steps []stepRun
	// emit is the emit func every step's Apply is given: it hands what the
	// step emits to the steps after the one applying (at, which apply sets
	// and restores around each Apply, so that an emit after a nested one
	// goes on from its own step). Steps call emit only inside their Apply
	// (EventStep), so one func serves them all, made once per run.
	emit func([]byte)
	at   int
	out  func(ev, typ []byte)

	declare  negotiate.Declaration
	declared string
	buf      []byte

	// The step list (Chain.stepsFor) of the type last looked up: a run's
	// events come in runs of one type (a message's deltas), and comparing
	// the type with the last one costs less than a lookup. lastType is a
	// copy (the event's type is borrowed) in typeBuf, which holds every
	// type the protocol names; nil when the list must be made again.
	// lastSteps leaves out the steps whose state declines the type
	// (Decliner), in liveBuf, once a step that may decline is made: bit i
	// of decliners is set when step i's state is a Decliner (the first 64).
	lastType  []byte
	lastSteps []int
	typeBuf   [40]byte
	decliners uint64
	liveBuf   [8]int
}

// stepRun is one step's part of a chain run: its state, nil until made
// (make), and the state as a Wanter, nil when it is none (every event of
// the step's types goes to it). Side by side, the two are one load's
// neighbours on every event the step is asked about.
type stepRun struct {
	state EventStep
	wants Wanter
}

// Start begins a run of the chain. out receives every event the chain emits
// and its type (rules.PeekType of it, which the chain read to route it),
// both borrowed until out returns. plan's declaration is applied to the
// run's RUN_STARTED before the steps see it.
func (c *Chain) Start(r *Run, plan negotiate.Plan, out func(ev, typ []byte)) *ChainRun {
	cr := &ChainRun{Run: r, chain: c, out: out, declare: plan.Declare, declared: plan.Declared}
	cr.steps = make([]stepRun, len(c.Steps))
	cr.emit = func(ev []byte) { cr.push(cr.at+1, ev, rules.PeekType(ev)) }
	return cr
}

// make makes step i's part of the run, when the step is first asked about
// an event: most steps concern event types a run may never carry, and a
// run that is open and quiet (its agent thinking) would hold the state of
// every step of the chain, about as much again as the rest of the stream.
func (cr *ChainRun) make(i int) {
	st := cr.chain.Steps[i].NewEvent()
	w, _ := st.(Wanter)
	cr.steps[i] = stepRun{st, w}
	if _, ok := st.(Decliner); ok && i < 64 {
		cr.decliners |= 1 << i
		cr.lastType = nil
	}
}

// stepsOf returns the chain's steps for events of type typ (Chain.stepsFor)
// less those whose state declines it (Decliner).
func (cr *ChainRun) stepsOf(typ []byte) []int {
	if cr.lastType == nil || string(typ) != string(cr.lastType) {
		cr.lastType, cr.lastSteps = append(cr.typeBuf[:0], typ...), cr.live(typ, cr.chain.stepsFor(typ))
	}
	return cr.lastSteps
}

// live returns steps, the list of type typ, less the steps whose state
// declines typ. A list longer than liveBuf is returned whole.
func (cr *ChainRun) live(typ []byte, steps []int) []int {
	if cr.decliners == 0 || len(steps) > len(cr.liveBuf) {
		return steps
	}
	out := cr.liveBuf[:0]
	for _, i := range steps {
		if i >= 64 || cr.decliners&(1<<i) == 0 || !cr.steps[i].state.(Decliner).Declines(cr.Run, typ) {
			out = append(out, i)
		}
	}
	return out
}

// Wanted says which step of a chain run first wants an event
// (ChainRun.Wanted), for ShapeWanted; the zero value, none.
type Wanted struct{ next int } // the step's index + 1

// Any reports whether a step wants the event.
func (w Wanted) Any() bool { return w.next > 0 }

// Wanted reports whether the run's chain may change ev, of type typ
// (rules.PeekType(ev), both borrowed), and which step wants it: the step of typ's
// list (Chain.stepsFor) that wants it first, or the whole chain for a
// RUN_STARTED the run declares on. When none does, the caller forwards the
// event's bytes as they are. Steps that can tell cheaply that ev is none of
// their business (Wanter) do not pull it in. This is the relay's question
// on every event of a translated run, so that the events no step wants cost
// a peek and a copy.
func (cr *ChainRun) Wanted(typ, ev []byte) Wanted {
	if cr.declare != negotiate.DeclareKeep && string(typ) == "RUN_STARTED" {
		return Wanted{1}
	}
	cr.Run.hop++
	for _, i := range cr.stepsOf(typ) {
		sr := &cr.steps[i]
		if sr.state == nil {
			cr.make(i)
		}
		if w := sr.wants; w == nil || w.Wants(cr.Run, typ, ev) {
			return Wanted{i + 1}
		}
	}
	return Wanted{}
}

// Verdict is what the chain's gate found of an event offered to Shape.
type Verdict int

const (
	// Shaped: the event was valid, and went through the chain.
	Shaped Verdict = iota
	// NotJSON: not JSON, or nested deeper than rules.MaxNesting. Never
	// repaired, never dropped: the caller relays it as it came, and every
	// consumer fails the run on it and says why.
	NotJSON
	// RepeatedMember: a top-level member named twice. The consumer reads
	// the last, a step would read the first (its type, a delta): malformed
	// either way, so relayed as it came for the consumer to judge, never
	// shaped into an event it would accept.
	RepeatedMember
)

// Shape is the gate every event passes before a step may shape it, as
// TranslateInputWith is the input's: a valid event (rules.ValidEvent) is
// pushed through the chain (PushTyped; typ is rules.PeekType(ev)), any other is
// left to the caller, untouched. ev is borrowed.
func (cr *ChainRun) Shape(ev, typ []byte) Verdict {
	if v := valid(ev); v != Shaped {
		return v
	}
	cr.PushTyped(ev, typ)
	return Shaped
}

// ShapeWanted is Shape for an event a step wants (w, which Wanted said of
// ev, unchanged since, with no other call on the run between): the step
// is handed the event without being asked again, nor are the steps before
// it, which did not want it.
func (cr *ChainRun) ShapeWanted(w Wanted, ev, typ []byte) Verdict {
	if v := valid(ev); v != Shaped || !w.Any() {
		return v
	}
	if string(typ) == "RUN_STARTED" {
		cr.PushTyped(ev, typ)
	} else {
		cr.apply(w.next-1, ev, typ)
	}
	return Shaped
}

// valid is the gate's verdict on ev: Shaped when a step may shape it.
func valid(ev []byte) Verdict {
	switch ok, repeats := rules.ValidEvent(unsafe.String(unsafe.SliceData(ev), len(ev))); {
	case !ok:
		return NotJSON
	case repeats:
		return RepeatedMember
	}
	return Shaped
}

// Push feeds one event into the chain, valid or not (see Shape). ev is
// borrowed.
func (cr *ChainRun) Push(ev []byte) { cr.PushTyped(ev, rules.PeekType(ev)) }

// PushTyped is Push for a caller that has read the event's type already
// (typ is rules.PeekType(ev), borrowed as ev is): the relay peeks every event to
// ask Wanted, and a second peek was a tenth of a THINKING upgrade.
func (cr *ChainRun) PushTyped(ev, typ []byte) {
	if string(typ) == "RUN_STARTED" {
		// The ids seed derived ids and name the run in warnings, after ev is
		// gone: keep copies of our own (a caller's may alias its buffer),
		// made only when the run does not hold the same already (the
		// relay's stream sets them from this RUN_STARTED).
		if id := Get(ev, "runId").String(); id != cr.Run.RunID {
			cr.Run.RunID = strings.Clone(id)
		}
		if id := Get(ev, "threadId").String(); id != cr.Run.ThreadID {
			cr.Run.ThreadID = strings.Clone(id)
		}
		if cr.declare != negotiate.DeclareKeep {
			ev, cr.buf = Declare(ev, cr.declare, cr.declared, cr.buf)
			typ = rules.PeekType(ev)
		}
	}
	cr.push(0, ev, typ)
}

// push hands ev, of type typ (rules.PeekType of it), to the first step from i on
// that wants it, among the steps of its type (steps): the type is read once
// per event per hop, and the steps that do not concern it are not visited.
func (cr *ChainRun) push(i int, ev, typ []byte) {
	cr.Run.hop++
	for _, j := range cr.stepsOf(typ) {
		if j < i {
			continue
		}
		// As in Wanted, written out: a helper for these lines is not inlined.
		sr := &cr.steps[j]
		if sr.state == nil {
			cr.make(j)
		}
		if w := sr.wants; w == nil || w.Wants(cr.Run, typ, ev) {
			cr.apply(j, ev, typ)
			return
		}
	}
	cr.out(ev, typ)
}

// apply hands ev, of type typ, to step i, whose state is made.
func (cr *ChainRun) apply(i int, ev, typ []byte) {
	prev, prevType, prevAt := cr.Run.step, cr.Run.typ, cr.at
	cr.Run.step, cr.Run.typ, cr.at = cr.chain.Steps[i], typ, i
	cr.steps[i].state.Apply(cr.Run, ev, cr.emit)
	cr.Run.step, cr.Run.typ, cr.at = prev, prevType, prevAt
	if i < 64 && cr.decliners&(1<<i) != 0 {
		cr.lastType = nil // its state may have changed: ask it again
	}
}

// order picks the steps of one direction that apply to target and puts them
// in the order they run: upgrades of retired shapes (oldest change first),
// then downgrades from the newest change down to the target, walking back
// one version at a time, then Late steps (which judge what the others left).
// steps is in registry order, oldest change first.
func order(dir Direction, target negotiate.Version, steps []*Step) []*Step {
	var ups, downs, late []*Step
	for _, s := range steps {
		if s.Direction != dir || !s.Applies(target) {
			continue
		}
		switch {
		case s.Kind == Upgrade:
			ups = append(ups, s)
		case s.Late:
			late = append(late, s)
		default:
			downs = append(downs, s)
		}
	}
	chain := ups
	for i := len(downs) - 1; i >= 0; i-- {
		chain = append(chain, downs[i])
	}
	return append(chain, late...)
}
