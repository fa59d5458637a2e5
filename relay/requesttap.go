package relay

// RequestTap watches a request that is not a run (GET /agent/capabilities)
// as the relay passes it to the producer (Relay.RequestTap): tracing's
// span of it. Its HeaderTap calls come first, in order; End is called
// once, when the producer's response was passed on (or the request
// refused), with the request's report: Route, RoutePrefix, Peer, URL,
// Status, Problem, Err, Abort (consumer_gone), Start and Duration are
// filled in, the rest is a run's and left zero. The report is borrowed for
// the call.
type RequestTap interface {
	HeaderTap
	End(rep *RunReport)
}

// traceparentID returns the trace id of a W3C traceparent header value
// ("00-" trace id "-" parent id "-" flags), "" when it is not a valid one:
// the id the log line of a run no tap traces carries, to be joined with
// the consumer's trace.
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
