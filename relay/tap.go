package relay

import (
	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// RunTap watches one run from its request to its report (Relay.Tap).
// Every slice it is given is borrowed for the call. Its methods are called
// one at a time, in the run's order, and only End is certain to be called;
// they must be quick, as most run on the stream's path.
type RunTap interface {
	// Received is the request body as the consumer sent it, called first.
	Received(body []byte)
	// Forwarded is the RunAgentInput sent to the producer and the plan
	// that shaped it, called just before the producer is contacted.
	Forwarded(plan negotiate.InputPlan, body []byte)
	// Streaming says the producer responded with an event stream;
	// producerConfigured is zero when learnt per run.
	Streaming(consumer, producerConfigured negotiate.Version)
	Read(p []byte)  // each chunk read from the producer
	Wrote(p []byte) // each chunk written to the consumer, buffered until Flushed
	// Flushed says what was written was flushed; events counts them so far.
	Flushed(events int)
	// Translated says a step rewrote shape, in the input or the events,
	// lossy or not.
	Translated(step *translate.Step, shape string, from, to negotiate.Version)
	// Warned is a lossy translation, once per shape per run, with a count.
	Warned(w translate.Warning)
	// End is called once when the run is over, with the final report,
	// borrowed for the call (Counts included).
	End(rep *RunReport)
}

// NopTap is a RunTap that does nothing. A tap embeds it and defines the
// methods it needs, so that it goes on compiling when RunTap gains one.
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

// HeaderTap is what a RunTap may also implement to carry a context in the
// request headers (W3C traceparent), as net/http's optional Flusher. Its
// calls come in the RunTap's order.
type HeaderTap interface {
	// ConsumerHeaders is given the consumer's request headers, borrowed
	// for the call, before Received.
	ConsumerHeaders(h *fasthttp.RequestHeader)
	// ProducerHeaders is given the producer's request headers just before
	// it is sent: what it leaves there is sent. To replace a header, Del
	// then Set: a consumer may have sent it in several lines.
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
	// One allocation a run for serve's three taps.
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
