package relay

import (
	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// Observer is the relay's translate.Observer: it logs each lossy
// translation at WARN, once per shape per run with its count, unless Quiet.
// Counting is the metrics' (Relay.Tap sees every translation, logged or
// not).
type Observer struct {
	// Log receives the warnings; nil discards them.
	Log *zap.Logger
	// Quiet silences the warnings (--quiet-translation-warnings).
	Quiet bool
}

// Translated does nothing: translations are counted by the metrics tap.
func (o *Observer) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}

// Warn logs one lossy translation of a run.
func (o *Observer) Warn(run *translate.Run, w translate.Warning) {
	if o.Quiet || o.Log == nil {
		return
	}
	var runID, threadID string
	if run != nil {
		runID, threadID = run.RunID, run.ThreadID
	}
	o.Log.Warn("lossy translation",
		zap.String("shape", w.Shape),
		zap.String("why", w.Why),
		zap.String("upgrade", w.Upgrade),
		zap.String("step", w.Step),
		zap.Stringer("direction", w.Direction),
		zap.String("from", VersionLabel(w.From)),
		zap.String("to", VersionLabel(w.To)),
		zap.String("run", runID),
		zap.String("thread", threadID),
		zap.Int("count", w.Count),
	)
}

var _ translate.Observer = (*Observer)(nil)
