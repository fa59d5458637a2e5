package relay

import (
	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// RunTap watches one run as it passes through the relay, from its request
// to its report: it is the one way to watch a Relay's runs (Relay.Tap), and
// metrics and recordings are taps. Every slice it is given is
// borrowed for the call. The methods of one RunTap are called one at a
// time, in the order the run goes through them (never concurrently), and
// only End is certain to be called; they must be quick, as most run on the
// stream's path.
type RunTap interface {
	// Received is the request body as the consumer sent it, called first.
	Received(body []byte)
	// Forwarded is the RunAgentInput sent to the producer and the plan
	// that shaped it (the same bytes as received when plan.Translate is
	// false), called just before the producer is contacted.
	Forwarded(plan negotiate.InputPlan, body []byte)
	// Streaming says the producer answered with an event stream, shaped for
	// a consumer of consumer from a producer configured as
	// producerConfigured (zero: learnt per run).
	Streaming(consumer, producerConfigured negotiate.Version)
	// Read is called with each chunk read from the producer's stream.
	Read(p []byte)
	// Wrote is called with each chunk written to the consumer (buffered;
	// see Flushed).
	Wrote(p []byte)
	// Flushed says what was written has been flushed to the consumer;
	// events is how many events were written so far.
	Flushed(events int)
	// Translated says a translation step rewrote shape, in the input or in
	// the events of the run (every translation, lossy or not).
	Translated(step *translate.Step, shape string, from, to negotiate.Version)
	// Warned is a lossy translation of the run, as the observer reports it
	// (once per shape per translated run, with a count).
	Warned(w translate.Warning)
	// End is called once when the run is over, with the final report,
	// borrowed for the call (copy what is kept, Counts included).
	End(rep *RunReport)
}

// NopTap is a RunTap that does nothing. A tap that watches part of a run
// embeds it and defines the methods it needs, as a type embeds
// http.ResponseWriter's implementation to override one method: it goes on
// compiling when RunTap gains a method.
type NopTap struct{}

var _ RunTap = NopTap{}

func (NopTap) Received([]byte)                                                          {}
func (NopTap) Forwarded(negotiate.InputPlan, []byte)                                    {}
func (NopTap) Streaming(negotiate.Version, negotiate.Version)                           {}
func (NopTap) Read([]byte)                                                              {}
func (NopTap) Wrote([]byte)                                                             {}
func (NopTap) Flushed(int)                                                              {}
func (NopTap) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}
func (NopTap) Warned(translate.Warning)                                                 {}
func (NopTap) End(*RunReport)                                                           {}

// HeaderTap is what a RunTap also implements to carry a context across the
// relay in the run's request headers (a trace's: W3C traceparent). The
// relay calls it on a tap that implements it, and on no other: a tap
// without it costs a run nothing. Its calls come in the RunTap's order.
type HeaderTap interface {
	// ConsumerHeaders is given the consumer's request headers, borrowed
	// for the call, right after the tap is made (before Received).
	ConsumerHeaders(h *fasthttp.RequestHeader)
	// ProducerHeaders is given the headers of the request to the
	// producer, once the consumer's end-to-end headers are copied into
	// them and just before it is sent (after Forwarded): what it leaves
	// there is sent (to replace a header: Del, then Set, as a consumer
	// may have sent it in several lines).
	ProducerHeaders(h *fasthttp.RequestHeader)
}

// JoinTaps returns a tap that calls each non-nil tap in turn, nil when
// there is none.
func JoinTaps(taps ...RunTap) RunTap {
	n, last := 0, RunTap(nil)
	for _, t := range taps {
		if t != nil {
			n, last = n+1, t
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return last
	}
	// One allocation a run for serve's taps (metrics, recordings, traces).
	m := &multiTap{}
	m.taps = m.buf[:0]
	for _, t := range taps {
		if t != nil {
			m.taps = append(m.taps, t)
		}
	}
	return m
}

type multiTap struct {
	taps []RunTap
	buf  [3]RunTap
}

func (m *multiTap) Received(b []byte) {
	for _, t := range m.taps {
		t.Received(b)
	}
}

func (m *multiTap) Forwarded(plan negotiate.InputPlan, b []byte) {
	for _, t := range m.taps {
		t.Forwarded(plan, b)
	}
}

func (m *multiTap) Streaming(c, p negotiate.Version) {
	for _, t := range m.taps {
		t.Streaming(c, p)
	}
}

func (m *multiTap) Read(p []byte) {
	for _, t := range m.taps {
		t.Read(p)
	}
}

func (m *multiTap) Wrote(p []byte) {
	for _, t := range m.taps {
		t.Wrote(p)
	}
}

func (m *multiTap) Flushed(events int) {
	for _, t := range m.taps {
		t.Flushed(events)
	}
}

func (m *multiTap) Translated(step *translate.Step, shape string, from, to negotiate.Version) {
	for _, t := range m.taps {
		t.Translated(step, shape, from, to)
	}
}

func (m *multiTap) Warned(w translate.Warning) {
	for _, t := range m.taps {
		t.Warned(w)
	}
}

func (m *multiTap) ConsumerHeaders(h *fasthttp.RequestHeader) {
	for _, t := range m.taps {
		if ht, ok := t.(HeaderTap); ok {
			ht.ConsumerHeaders(h)
		}
	}
}

func (m *multiTap) ProducerHeaders(h *fasthttp.RequestHeader) {
	for _, t := range m.taps {
		if ht, ok := t.(HeaderTap); ok {
			ht.ProducerHeaders(h)
		}
	}
}

func (m *multiTap) End(rep *RunReport) {
	for _, t := range m.taps {
		t.End(rep)
	}
}
