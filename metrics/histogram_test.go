package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A batch of n observations of one value counts as n observations of it in
// Prometheus's own histogram: the same buckets (bounds included), count and
// sum.
func TestBatchHistogramCountsAsPrometheusHistogram(t *testing.T) {
	desc := prometheus.NewDesc("h", "h", nil, nil)
	batch := newBatchHistogram(eventLatencyBuckets[:])
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Help: "h", Buckets: eventLatencyBuckets[:]})
	rng := rand.New(rand.NewPCG(3, 4))
	values := append([]float64{0, 2}, eventLatencyBuckets[:]...) // on the bounds, and past the last
	for range 200 {
		values = append(values, math.Exp(rng.Float64()*14-12)) // 6 µs to 7 s
	}
	for i, v := range values {
		n := i % 5 // batches of 0 to 4
		batch.observeN(v, n)
		for range n {
			ref.Observe(v)
		}
	}
	var got, want dto.Metric
	if err := batch.metric(desc).Write(&got); err != nil {
		t.Fatal(err)
	}
	if err := ref.Write(&want); err != nil {
		t.Fatal(err)
	}
	g, w := got.GetHistogram(), want.GetHistogram()
	if g.GetSampleCount() != w.GetSampleCount() || math.Abs(g.GetSampleSum()-w.GetSampleSum()) > 1e-9*w.GetSampleSum() {
		t.Fatalf("count %d sum %g, want %d and %g", g.GetSampleCount(), g.GetSampleSum(), w.GetSampleCount(), w.GetSampleSum())
	}
	if len(g.GetBucket()) != len(w.GetBucket()) {
		t.Fatalf("%d buckets, want %d", len(g.GetBucket()), len(w.GetBucket()))
	}
	for i, b := range w.GetBucket() {
		if gb := g.GetBucket()[i]; gb.GetUpperBound() != b.GetUpperBound() || gb.GetCumulativeCount() != b.GetCumulativeCount() {
			t.Errorf("bucket le=%g: %d, want le=%g: %d", gb.GetUpperBound(), gb.GetCumulativeCount(), b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}
