package harness

import (
	"math"
	"math/bits"
	"sync"
)

// Hist counts non-negative durations (nanoseconds) in log-linear buckets:
// values below 128 exactly, larger values with 7 bits of mantissa, so that
// every bucket is at most 1/128 (0.8%) of its value wide. It is not safe for
// concurrent use; see ShardedHist.
type Hist struct {
	counts []uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits
	// histBuckets covers every int64.
	histBuckets = (64 - histSubBits) * histSub
)

// NewHist returns an empty histogram.
func NewHist() *Hist {
	return &Hist{counts: make([]uint64, histBuckets), min: math.MaxInt64}
}

func histIndex(v int64) int {
	if v < histSub {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	// e is the number of low bits dropped so that the top histSubBits+1
	// bits remain: the mantissa m lies in [histSub, 2*histSub).
	e := bits.Len64(uint64(v)) - histSubBits - 1
	m := int(uint64(v) >> uint(e))
	return (e+1)*histSub + (m - histSub)
}

// bucketBounds returns the smallest and largest value counted in bucket i.
func bucketBounds(i int) (lo, hi int64) {
	if i < histSub {
		return int64(i), int64(i)
	}
	e := i/histSub - 1
	m := int64(i%histSub + histSub)
	lo = m << uint(e)
	hi = lo + (int64(1) << uint(e)) - 1
	return lo, hi
}

// Record counts one value.
func (h *Hist) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	h.n++
	h.sum += float64(v)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts to h.
func (h *Hist) Merge(o *Hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
}

// Count is the number of values recorded.
func (h *Hist) Count() uint64 { return h.n }

// Micros returns the p50, p99, p999, mean and max in microseconds, for
// values recorded in nanoseconds; zeros when empty.
func (h *Hist) Micros() (p50, p99, p999, mean, max float64) {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return us(h.Quantile(0.50)), us(h.Quantile(0.99)), us(h.Quantile(0.999)), h.Mean() / 1e3, us(h.Max())
}

// Mean is the arithmetic mean, 0 when empty.
func (h *Hist) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Max is the largest value recorded, 0 when empty.
func (h *Hist) Max() int64 {
	if h.n == 0 {
		return 0
	}
	return h.max
}

// Quantile returns the value at quantile q (0 < q ≤ 1) by the nearest-rank
// method: the smallest recorded value v such that at least q·n values are
// ≤ v, reported as the midpoint of v's bucket (exact below 128 and clamped
// to the recorded min and max). It returns 0 when empty.
func (h *Hist) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketBounds(i)
			v := lo + (hi-lo)/2
			if v < h.min {
				v = h.min
			}
			if v > h.max {
				v = h.max
			}
			return v
		}
	}
	return h.max
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
