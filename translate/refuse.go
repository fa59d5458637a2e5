package translate

import (
	"strings"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// usageSince is the first consumer release that reads RUN_ERROR.usage.
var usageSince = negotiate.Version{Patch: 58}

// appendRefusal appends the RUN_ERROR that replaces a RUN_FINISHED whose
// outcome the consumer cannot represent, where passing it on would make the
// consumer read a paused or cancelled run as a success (or fail its parse).
// The refusal says what happened, which client cannot represent it and what
// to upgrade to; it keeps the run's usage when the consumer reads usage.
// what is a clause ("the run was cancelled"); code is the RUN_ERROR code.
func appendRefusal(dst []byte, r *Run, finished []byte, what, code, upgradeTo string) []byte {
	dst = append(dst, `{"type":"RUN_ERROR","message":`...)
	dst = AppendJSONString(dst, "agui-relay: "+what+"; @ag-ui/client "+r.To.String()+
		" cannot represent it — upgrade to "+upgradeTo)
	dst = append(dst, `,"code":`...)
	dst = AppendJSONString(dst, code)
	if r.To.AtLeast(usageSince) {
		if u := Get(finished, "usage"); u.Exists() {
			dst = append(dst, `,"usage":`...)
			dst = append(dst, u.Raw...) // raw: a malformed usage is not repaired either
		}
	}
	return append(dst, '}')
}

// consumerRejects reports whether a consumer of v fails the run on ev
// itself, whatever its outcome: rules.JudgeEvent for v finds a value v's
// schema rejects (a required member missing, a value of the wrong kind).
// Material v does not read is stripped, not judged, so a defect there does
// not count. Neither does a duplicate key (the relay calls it malformed
// because readers disagree, but the client's JSON.parse keeps the last
// value and its schema may accept it) nor nesting past rules.MaxNesting
// (the relay's own limit; such an event never reaches a step).
func consumerRejects(v negotiate.Version, ev []byte) bool {
	j := rules.JudgeEvent(v, ev)
	if j.Verdict != rules.Malformed {
		return false
	}
	for _, f := range j.Findings {
		if f.Verdict == rules.Malformed && f.Rule != "duplicate-key" && !strings.HasPrefix(f.Rule, "max-depth:") {
			return true
		}
	}
	return false
}
