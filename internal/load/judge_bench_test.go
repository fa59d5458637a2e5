package load

import (
	"testing"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/synth"
	"github.com/agui-relay/agui-relay/rules"
)

// BenchmarkRunJudge is the order and terminal check of a synthetic
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
	types := make([][]byte, len(evs))
	for i, ev := range evs {
		types[i] = rules.PeekType(ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		j := NewRunJudge()
		for i, ev := range evs {
			j.Event(ev, types[i])
		}
		if k, msg := j.Verdict(); k != "" {
			b.Fatal(msg)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}
