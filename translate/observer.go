package translate

import (
	"fmt"
	"io"
	"sync"

	"github.com/agui-relay/agui-relay/negotiate"
)

// LineObserver writes one line per warning to W: the shape lost, how many
// times in the run, why, and what to upgrade. It counts nothing else. It is
// safe for concurrent use.
type LineObserver struct {
	W  io.Writer
	mu sync.Mutex
}

// Translated does nothing: only losses are reported.
func (o *LineObserver) Translated(*Step, string, negotiate.Version, negotiate.Version) {}

// Warn writes w as one line.
func (o *LineObserver) Warn(r *Run, w Warning) {
	o.mu.Lock()
	defer o.mu.Unlock()
	from := "legacy (undeclared)"
	if !w.From.IsZero() {
		from = w.From.String()
	}
	fmt.Fprintf(o.W, "warning: lost %s (x%d) in run %q, %s %s -> %s, step %s: %s; upgrade: %s\n",
		w.Shape, w.Count, r.RunID, w.Direction, from, w.To, w.Step, w.Why, w.Upgrade)
}

var _ Observer = (*LineObserver)(nil)
