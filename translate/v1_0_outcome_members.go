package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// outcomeMembers reshapes, for consumers older than 1.0, the outcome objects
// 1.0 made open: RUN_FINISHED.outcome.success.pendingToolCallIds (new in 1.0)
// is removed for every older consumer, and toward 0.0.54–0.0.59, which
// validate outcomes strictly and fail the whole run on an unknown member, any
// other member of a success or interrupt outcome (and, toward 0.0.59, of a
// SUBAGENT_FINISHED success or suspended outcome) is removed too.
//
// pendingToolCallIds: lossless when it equals what a consumer derives itself
// (the tool calls started in the run that got no TOOL_CALL_RESULT, compared
// as sets), else lossy with a warning. Other members: lossy with a warning
// (they would carry meaning for a 1.0 reader). A malformed
// pendingToolCallIds (not an array of strings) is passed on: a downgrade does
// not repair. Outcome types other than success and interrupt are not this
// step's: cancelled is refused by cancelled-outcome, unknown types removed by
// unrecognised-material.
//
// Reference consumer: 1.0 reports pendingToolCallIds to subscribers (its own
// list, else the derived one); 0.0.54–0.0.59 reject the run on the member.
var outcomeMembers = &Step{
	Name:        "outcome-members",
	Description: "members 1.0 added to RUN_FINISHED/SUBAGENT_FINISHED outcomes (pendingToolCallIds, unknown keys) are removed for strict legacy outcomes",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	// The tool-call events are read to derive the pending list.
	Types:    []string{"RUN_FINISHED", "SUBAGENT_FINISHED", "TOOL_CALL_START", "TOOL_CALL_CHUNK", "TOOL_CALL_RESULT"},
	NewEvent: func() EventStep { return &outcomeRun{} },
}

var (
	strictOutcomeSince  = negotiate.Version{Patch: 54}
	subagentsSince      = negotiate.Version{Patch: 59}
	outcomeMemberUpdate = "@ag-ui/client 1.0 (reads open outcome objects)"
)

type outcomeRun struct {
	rewriter
	started []string            // tool calls started in the run, in order
	results map[string]struct{} // tool calls that got a TOOL_CALL_RESULT
}

func (o *outcomeRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	switch string(r.EventType()) {
	case "TOOL_CALL_START", "TOOL_CALL_CHUNK":
		if id := Get(ev, "toolCallId"); id.Type == gjson.String && !o.isStarted(id.Str) {
			o.started = append(o.started, strings.Clone(id.Str)) // Str aliases the borrowed event
		}
		emit(ev)
	case "TOOL_CALL_RESULT":
		if id := Get(ev, "toolCallId"); id.Type == gjson.String {
			if o.results == nil {
				o.results = map[string]struct{}{}
			}
			o.results[strings.Clone(id.Str)] = struct{}{}
		}
		emit(ev)
	case "RUN_FINISHED":
		o.runFinished(r, ev)
		o.emit(ev, emit)
	case "SUBAGENT_FINISHED":
		if r.To.AtLeast(subagentsSince) {
			out := Get(ev, "outcome")
			switch Sub(out, "type").Str {
			case "success":
				o.dropMembers(r, out, "SUBAGENT_FINISHED.outcome", "type", "")
			case "suspended":
				o.dropMembers(r, out, "SUBAGENT_FINISHED.outcome", "type", "interruptIds")
			}
		}
		o.emit(ev, emit)
	default:
		emit(ev)
	}
}

func (o *outcomeRun) isStarted(id string) bool {
	for _, s := range o.started {
		if s == id {
			return true
		}
	}
	return false
}

func (o *outcomeRun) runFinished(r *Run, ev []byte) {
	out := Get(ev, "outcome")
	strict := r.To.AtLeast(strictOutcomeSince)
	switch Sub(out, "type").Str {
	case "success":
		if p := Sub(out, "pendingToolCallIds"); p.Exists() && !o.pendingWellFormed(p) {
			return // malformed: passed on, not repaired
		}
		o.items = Items(out, o.items[:0])
		o.ed.DeleteItems(o.items, func(i int) bool {
			it := o.items[i]
			switch it.Key.Str {
			case "type":
				return false
			case "pendingToolCallIds":
				if o.derivable(it.Value) {
					r.Translated("RUN_FINISHED.outcome.pendingToolCallIds")
				} else {
					r.Lost("RUN_FINISHED.outcome.pendingToolCallIds",
						"@ag-ui/client "+r.To.String()+" has no pendingToolCallIds and derives the pending tool calls itself (started without a result); the producer's list differed from that",
						outcomeMemberUpdate)
				}
				return true
			}
			return o.unknownMember(r, strict, "RUN_FINISHED.outcome")
		})
	case "interrupt":
		if strict {
			o.dropMembers(r, out, "RUN_FINISHED.outcome", "type", "interrupts")
		}
	}
}

// dropMembers removes the members of a strict outcome other than keep1 and
// keep2.
func (o *outcomeRun) dropMembers(r *Run, out gjson.Result, shape, keep1, keep2 string) {
	o.items = Items(out, o.items[:0])
	o.ed.DeleteItems(o.items, func(i int) bool {
		k := o.items[i].Key.Str
		if k == keep1 || (keep2 != "" && k == keep2) {
			return false
		}
		return o.unknownMember(r, true, shape)
	})
}

func (o *outcomeRun) unknownMember(r *Run, strict bool, shape string) bool {
	if !strict {
		return false // ignored or stripped by the consumer itself
	}
	r.Lost(shape+" (member unknown to "+r.To.String()+")",
		"@ag-ui/client "+r.To.String()+" validates outcomes strictly and fails the whole run on an unknown member",
		outcomeMemberUpdate)
	return true
}

func (o *outcomeRun) pendingWellFormed(p gjson.Result) bool {
	if !p.IsArray() {
		return false
	}
	ok := true
	p.ForEach(func(_, v gjson.Result) bool {
		ok = v.Type == gjson.String
		return ok
	})
	return ok
}

// derivable reports whether the list equals, as a set, the tool calls
// started in the run that got no result.
func (o *outcomeRun) derivable(p gjson.Result) bool {
	listed := 0
	ok := true
	p.ForEach(func(_, v gjson.Result) bool {
		_, done := o.results[v.Str]
		if !o.isStarted(v.Str) || done {
			ok = false
		}
		listed++
		return ok
	})
	if !ok {
		return false
	}
	pending := 0
	for _, id := range o.started {
		if _, done := o.results[id]; !done {
			pending++
		}
	}
	// Duplicates in the list would make the counts differ: not the same set
	// as far as a reader of the list can tell.
	return listed == pending
}
