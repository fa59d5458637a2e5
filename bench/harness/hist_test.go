package harness

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestHistExactBelow2048(t *testing.T) {
	h := NewHist()
	for v := int64(1); v <= 100; v++ {
		h.Record(v)
	}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0.01, 1}, {0.5, 50}, {0.99, 99}, {0.999, 100}, {1, 100}} {
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%g) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if h.Count() != 100 || h.Mean() != 50.5 || h.Max() != 100 {
		t.Errorf("count %d mean %g max %d", h.Count(), h.Mean(), h.Max())
	}
}

// TestHistAgainstSort compares quantiles with the nearest-rank quantiles of
// the sorted samples: within three significant figures.
func TestHistAgainstSort(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var xs []int64
	h := NewHist()
	for i := 0; i < 100000; i++ {
		// Log-normal-ish latencies from 1 µs to a few ms.
		v := int64(math.Exp(r.NormFloat64()*1.2 + 11))
		xs = append(xs, v)
		h.Record(v)
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := xs[int(math.Ceil(q*float64(len(xs))))-1]
		got := h.Quantile(q)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 1.0/1000 {
			t.Errorf("Quantile(%g) = %d, want %d ± 0.1%% (off by %.2f%%)", q, got, want, rel*100)
		}
	}
}

func TestHistMergeAndEmpty(t *testing.T) {
	a, b := NewHist(), NewHist()
	if a.Quantile(0.99) != 0 || a.Mean() != 0 || a.Max() != 0 {
		t.Error("empty histogram should report zeros")
	}
	for i := int64(0); i < 10; i++ {
		a.Record(10)
		b.Record(1000)
	}
	a.Merge(b)
	if a.Count() != 20 || a.Quantile(0.5) != 10 || a.Quantile(0.55) < 990 {
		t.Errorf("merged: n %d p50 %d p55 %d", a.Count(), a.Quantile(0.5), a.Quantile(0.55))
	}
}

func TestShardedHistRecorders(t *testing.T) {
	s := NewShardedHist()
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			r := s.Recorder()
			for i := 0; i < 1000; i++ {
				r.Record(int64(i))
			}
			r.Flush()
			done <- struct{}{}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	if n := s.Snapshot().Count(); n != 4000 {
		t.Errorf("count %d, want 4000", n)
	}
}

// Micros reports nanosecond values in microseconds, zeros when empty.
func TestHistMicros(t *testing.T) {
	h := NewHist()
	if a, b, c, d, e := h.Micros(); a != 0 || b != 0 || c != 0 || d != 0 || e != 0 {
		t.Errorf("empty: %v %v %v %v %v", a, b, c, d, e)
	}
	for _, v := range []int64{1000, 2000, 3000, 100} { // exact below 128 ns
		h.Record(v)
	}
	p50, _, _, mean, max := h.Micros()
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	if !near(p50, 1) || !near(mean, 1.525) || max != 3 {
		t.Errorf("p50 %v mean %v max %v µs, want 1, 1.525, 3", p50, mean, max)
	}
}
