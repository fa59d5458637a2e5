package relay

import (
	"sort"
	"sync"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// TranslationKey names one kind of translation for counting: which step
// rewrote which shape, in which direction, between which versions.
type TranslationKey struct {
	Step, Shape string
	Direction   translate.Direction
	From, To    negotiate.Version
}

// TranslationCounts counts translations (every one, lossy or not) and lossy
// translations by key. It is safe for concurrent use. Metrics hook in with
// OnCount or read Snapshot.
type TranslationCounts struct {
	// OnCount, when set, is called for every count added (lossy reports
	// whether it counted a loss), after the count is recorded. It must be
	// safe for concurrent use and quick: it runs on the relay's hot path.
	OnCount func(k TranslationKey, lossy bool, n int)

	mu         sync.Mutex
	translated map[TranslationKey]int
	lost       map[TranslationKey]int
}

func (c *TranslationCounts) add(k TranslationKey, lossy bool, n int) {
	c.mu.Lock()
	m := &c.translated
	if lossy {
		m = &c.lost
	}
	if *m == nil {
		*m = map[TranslationKey]int{}
	}
	(*m)[k] += n
	c.mu.Unlock()
	if c.OnCount != nil {
		c.OnCount(k, lossy, n)
	}
}

// TranslationCount is one row of a snapshot.
type TranslationCount struct {
	TranslationKey
	Translated, Lost int
}

// Snapshot returns the counts so far, sorted by step, shape and versions.
func (c *TranslationCounts) Snapshot() []TranslationCount {
	c.mu.Lock()
	rows := map[TranslationKey]*TranslationCount{}
	row := func(k TranslationKey) *TranslationCount {
		r := rows[k]
		if r == nil {
			r = &TranslationCount{TranslationKey: k}
			rows[k] = r
		}
		return r
	}
	for k, n := range c.translated {
		row(k).Translated = n
	}
	for k, n := range c.lost {
		row(k).Lost = n
	}
	c.mu.Unlock()
	out := make([]TranslationCount, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Step != b.Step:
			return a.Step < b.Step
		case a.Shape != b.Shape:
			return a.Shape < b.Shape
		case a.Direction != b.Direction:
			return a.Direction < b.Direction
		case a.From != b.From:
			return a.From.Less(b.From)
		}
		return a.To.Less(b.To)
	})
	return out
}

// Observer is the relay's translate.Observer: it counts every translation
// in Counts and logs each lossy one at WARN, once per shape per run with its
// count, unless Quiet (then it is still counted).
type Observer struct {
	// Log receives the warnings; nil discards them.
	Log *zap.Logger
	// Quiet silences the warnings (--quiet-translation-warnings).
	Quiet bool
	// Counts receives the counts; nil means they are not kept.
	Counts *TranslationCounts
}

// Translated counts one translation of shape by step.
func (o *Observer) Translated(step *translate.Step, shape string, from, to negotiate.Version) {
	if o.Counts == nil {
		return
	}
	k := TranslationKey{Shape: shape, From: from, To: to}
	if step != nil {
		k.Step, k.Direction = step.Name, step.Direction
	}
	o.Counts.add(k, false, 1)
}

// Warn counts and logs one lossy translation of a run.
func (o *Observer) Warn(run *translate.Run, w translate.Warning) {
	if o.Counts != nil {
		o.Counts.add(TranslationKey{Step: w.Step, Shape: w.Shape, Direction: w.Direction, From: w.From, To: w.To}, true, w.Count)
	}
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
		zap.String("from", versionOrUnknown(w.From)),
		zap.String("to", versionOrUnknown(w.To)),
		zap.String("run", runID),
		zap.String("thread", threadID),
		zap.Int("count", w.Count),
	)
}

var _ translate.Observer = (*Observer)(nil)
