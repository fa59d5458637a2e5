package translate

import "github.com/agui-relay/agui-relay/negotiate"

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
