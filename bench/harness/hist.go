package harness

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Hist counts non-negative durations (nanoseconds) in an HDR histogram
// (github.com/HdrHistogram/hdrhistogram-go, as the load generator's
// timings): three significant figures, so values below 2048 are exact and
// larger ones within 0.1%, from 1 ns to an hour (longer ones count as an
// hour). The count, sum and extremes are kept exactly beside it. It is not
// safe for concurrent use; see ShardedHist.
type Hist struct {
	h   *hdrhistogram.Histogram
	sum float64
	min int64
	max int64
}

const histMaxNanos = int64(time.Hour)

// NewHist returns an empty histogram.
func NewHist() *Hist {
	return &Hist{h: hdrhistogram.New(1, histMaxNanos, 3), min: math.MaxInt64}
}

// Record counts one value.
func (h *Hist) Record(v int64) {
	v = min(max(v, 0), histMaxNanos)
	h.h.RecordValue(v) //nolint:errcheck // clamped into range above
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Hist) Merge(o *Hist) {
	if o.Count() == 0 {
		return
	}
	h.h.Merge(o.h)
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of values recorded.
func (h *Hist) Count() uint64 { return uint64(h.h.TotalCount()) }

// Micros returns the p50, p99, p999, mean and max in microseconds, for
// values recorded in nanoseconds; zeros when empty.
func (h *Hist) Micros() (p50, p99, p999, mean, max float64) {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return us(h.Quantile(0.50)), us(h.Quantile(0.99)), us(h.Quantile(0.999)), h.Mean() / 1e3, us(h.Max())
}

// Mean is the arithmetic mean, 0 when empty.
func (h *Hist) Mean() float64 {
	if h.Count() == 0 {
		return 0
	}
	return h.sum / float64(h.Count())
}

// Max is the largest value recorded, 0 when empty.
func (h *Hist) Max() int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.max
}

// Quantile returns the value at quantile q (0 < q ≤ 1), the HDR
// histogram's (the largest value of the bucket holding the value of rank
// q·n, rounded), clamped to the recorded min and max; 0 when empty.
func (h *Hist) Quantile(q float64) int64 {
	if h.Count() == 0 {
		return 0
	}
	return min(max(h.h.ValueAtQuantile(q*100), h.min), h.max)
}

// ShardedHist is a histogram that many goroutines record into. Each
// goroutine takes a Recorder, which batches values locally and merges them
// under a lock.
type ShardedHist struct {
	mu sync.Mutex
	h  *Hist
}

// NewShardedHist returns an empty sharded histogram.
func NewShardedHist() *ShardedHist { return &ShardedHist{h: NewHist()} }

// Recorder batches values for one goroutine.
type Recorder struct {
	s   *ShardedHist
	buf []int64
}

// Recorder returns a new batching recorder; call Flush when done.
func (s *ShardedHist) Recorder() *Recorder {
	return &Recorder{s: s, buf: make([]int64, 0, 512)}
}

// Record adds one value, merging the batch when it is full.
func (r *Recorder) Record(v int64) {
	r.buf = append(r.buf, v)
	if len(r.buf) == cap(r.buf) {
		r.Flush()
	}
}

// Flush merges the values batched so far.
func (r *Recorder) Flush() {
	if len(r.buf) == 0 {
		return
	}
	r.s.mu.Lock()
	for _, v := range r.buf {
		r.s.h.Record(v)
	}
	r.s.mu.Unlock()
	r.buf = r.buf[:0]
}

// Snapshot returns a copy of the merged histogram.
func (s *ShardedHist) Snapshot() *Hist {
	out := NewHist()
	s.mu.Lock()
	out.Merge(s.h)
	s.mu.Unlock()
	return out
}
