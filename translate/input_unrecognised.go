package translate

import (
	"strings"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// inputUnrecognised strips, toward a producer known to be older than the
// consumer, the input material that producer does not recognise (what
// rules.JudgeInput reports as unrecognised for its version: unknown members,
// message roles, part types, source types), each with a warning.
//
// Lossy, with a warning per shape: the producer does not see what went. The
// versioning draft has a producer strip unrecognised input with a warning
// and run (spec 003, Error Handling); the relay does it before the producer
// sees it because older cores fail on some of it (unknown roles and part
// types) and strip the rest silently. Toward a producer that is not older
// than the consumer nothing is stripped: what it does not know is for it to
// judge. Malformed values are left as they are (a translation never
// repairs), and so is everything under forwardedProps, which is opaque and
// never altered.
//
// It is a Late step: it judges what the version steps left (parts flattened,
// media made binary, …) against the producer's version. Toward a producer
// named by its Python release it does nothing: inputPython judges by that
// release's models, which take unknown members from 0.1.10 on.
var inputUnrecognised = &Step{
	Name:        "unrecognised-input",
	Description: "input members, roles and part types an older producer does not recognise are stripped with a warning",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Late:        true,
	Input: func(r *Run, in []byte) []byte {
		if !r.To.Less(r.From) || !r.Python.IsZero() {
			return in
		}
		j := rules.JudgeInput(clientOfCore(r.To), in)
		var u unrecognisedRun
		for _, f := range j.Findings {
			if f.Verdict != rules.Unrecognised || f.Pointer == "" ||
				f.Pointer == "/forwardedProps" || strings.HasPrefix(f.Pointer, "/forwardedProps/") {
				continue
			}
			u.drops = append(u.drops, f.Pointer)
			r.Lost(f.Shape,
				"a producer on @ag-ui/core "+r.To.String()+" does not recognise it ("+f.Rule+" at "+f.Pointer+")",
				"a producer on a newer @ag-ui/core (1.0 strips unrecognised input with a warning of its own)")
		}
		if len(u.drops) == 0 {
			return in
		}
		u.remove(in)
		return applyInput(in, &u.ed)
	},
}

// clientOfCore names the client release whose shape tables describe the
// RunAgentInput a producer on @ag-ui/core v reads. rules keeps its tables by
// client release, and every client pins the core of its own number except
// client 0.0.40, which pins core 0.0.39: what core 0.0.40 added (content
// parts, activity, parentRunId) reached consumers with client 0.0.41
// (legacy-profiles.md §0).
func clientOfCore(v negotiate.Version) negotiate.Version {
	if v == (negotiate.Version{Patch: 40}) {
		return negotiate.Version{Patch: 41}
	}
	return v
}
