package relay

// RequestTap watches a request that is not a run (Relay.RequestTap). End
// is called once, with a report whose run fields are zero, borrowed for the
// call.
type RequestTap interface {
	HeaderTap
	End(rep *RunReport)
}

// traceparentID returns the trace id of a W3C traceparent header value,
// "" when it is not a valid one.
func traceparentID(tp []byte) string {
	// version "-" 32 hex "-" 16 hex "-" 2 hex; a later version may append
	// "-" and more (W3C Trace Context §3.2.4).
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' ||
		(len(tp) > 55 && (string(tp[:2]) == "00" || tp[55] != '-')) || string(tp[:2]) == "ff" {
		return ""
	}
	zero := true
	for i, c := range tp[:55] {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
		if i > 2 && i < 35 && c != '0' {
			zero = false
		}
	}
	if zero {
		return ""
	}
	return string(tp[3:35])
}
