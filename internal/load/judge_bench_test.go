package load

import (
	"testing"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// BenchmarkRunJudge is the type, order and terminal check of a synthetic
// 1,000-event run, per event.
func BenchmarkRunJudge(b *testing.B) {
	plan := synth.NewPlan(synth.Dialect10, 1000)
	w := synth.RunWriter{D: synth.Dialect10, RunID: "r", Thread: "t"}
	var run []byte
	for i, k := range plan.Kinds {
		run = w.AppendFrame(run, k, int64(i))
	}
	var evs [][]byte
	sc := event.NewScanner(nil, 0)
	sc.Push(run, func(f event.Frame) { evs = append(evs, append([]byte(nil), f.Data...)) }) //nolint:errcheck
	b.ReportAllocs()
	j := NewRunJudge()
	for b.Loop() {
		j.Reset() // as a slot does between its runs
		for _, ev := range evs {
			j.Next(ev)
		}
		if k, msg := j.Verdict(); k != "" {
			b.Fatal(msg)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}
