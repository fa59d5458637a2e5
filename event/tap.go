package event

import (
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// Tap watches what a Stream writes and translates. It is the event layer's
// part of the relay's RunTap, which the relay hands to its streams as it is
// (event imports no relay). Every slice it is given is borrowed for the
// call; its methods are called one at a time, on the stream's path, and
// must be quick.
type Tap interface {
	// Read is called with each chunk Pump read from the producer's stream.
	Read(p []byte)
	// Wrote is called with each chunk written to the sink.
	Wrote(p []byte)
	// Flushed says Pump flushed the sink; events is how many events were
	// written so far.
	Flushed(events int)
	// Translated says a translation step rewrote shape.
	Translated(step *translate.Step, shape string, from, to negotiate.Version)
	// Warned is a lossy translation, as the observer reports it (once per
	// shape per translated run, with a count).
	Warned(w translate.Warning)
}

// tapObserver is the observer of one run's translations when the run is
// tapped: it reports to the shared observer (counts, warnings) and to the
// tap.
type tapObserver struct {
	shared translate.Observer
	tap    Tap
}

func (o *tapObserver) Translated(step *translate.Step, shape string, from, to negotiate.Version) {
	if o.shared != nil {
		o.shared.Translated(step, shape, from, to)
	}
	o.tap.Translated(step, shape, from, to)
}

func (o *tapObserver) Warn(run *translate.Run, w translate.Warning) {
	if o.shared != nil {
		o.shared.Warn(run, w)
	}
	o.tap.Warned(w)
}

// ObserverFor returns the observer of a run's translations: shared, or
// shared and tap when tap is not nil.
func ObserverFor(shared translate.Observer, tap Tap) translate.Observer {
	if tap == nil {
		return shared
	}
	return &tapObserver{shared: shared, tap: tap}
}
