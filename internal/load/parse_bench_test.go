package load

import (
	"testing"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// BenchmarkEventPath is the generator's work per event without sockets: a
// synthetic run's bytes, in 16 KiB pieces, through the scanner and
// the per-event bookkeeping (type, first content, gaps, the run's order
// and terminal), bodies not judged.
func BenchmarkEventPath(b *testing.B) {
	plan := synth.NewPlan(synth.Dialect10, 1000)
	w := synth.RunWriter{D: synth.Dialect10, RunID: "r", Thread: "t"}
	var run []byte
	for i, k := range plan.Kinds {
		run = w.AppendFrame(run, k, int64(i))
	}
	sh := &shard{total: newHists(), interval: newHist()}
	st := &runState{r: &Runner{}, sh: sh, sc: event.NewScanner(nil, 0)}
	b.SetBytes(int64(len(run)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.sc.Reset()
		st.events, st.firstEv, st.firstCont, st.judge = 0, 0, 0, NewRunJudge()
		for off := 0; off < len(run); off += 16 << 10 {
			st.now = int64(i*1000 + off)
			st.sc.Push(run[off:min(off+16<<10, len(run))], st.frame)
		}
		st.sh.mu.Lock()
		st.recordGaps()
		st.sh.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(plan.Kinds)), "ns/event")
}
