package relay

import (
	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// lossLog is the Relay's translate.Observer: it logs each lossy
// translation at WARN, once per shape per run with its count, unless quiet.
// The taps are told through event.ObserverFor.
type lossLog struct {
	log   *zap.Logger
	quiet bool // Relay.QuietTranslationWarnings
}

// Translated does nothing: translations are counted by the metrics tap.
func (o *lossLog) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}

func (o *lossLog) Warn(run *translate.Run, w translate.Warning) {
	if o.quiet {
		return
	}
	ce := o.log.Check(zap.WarnLevel, "lossy translation") // fields only for a line that is written
	if ce == nil {
		return
	}
	var runID, threadID string
	if run != nil {
		runID, threadID = run.RunID, run.ThreadID
	}
	ce.Write(
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
