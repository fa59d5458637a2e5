package load

import (
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Timing names one of the durations a run is measured by.
type Timing int

// The timings of a run.
const (
	// Headers: from the request's first byte written to the response's
	// headers read.
	Headers Timing = iota
	// FirstEvent: from the request to the first event.
	FirstEvent
	// FirstContent: from the request to the first content event
	// (TEXT_MESSAGE_CONTENT or TEXT_MESSAGE_CHUNK): the first token a user
	// sees.
	FirstContent
	// Gap: between two events of a run, as read (events that arrive in one
	// read have a gap of 0).
	Gap
	// Whole: the whole run, from the request to the end of its body.
	Whole
	nTimings
)

var timingNames = [nTimings]string{"headers", "first event", "first content", "gap between events", "whole run"}
var timingKeys = [nTimings]string{"headers", "first_event", "first_content", "gap", "run"}

func (t Timing) String() string { return timingNames[t] }

// Timings lists every timing, in report order.
func Timings() []Timing { return []Timing{Headers, FirstEvent, FirstContent, Gap, Whole} }

// Histograms are in microseconds, from 1 µs to an hour (longer values are
// counted as an hour), to three significant figures.
const (
	histMaxMicros = 3600 * 1_000_000
	histDigits    = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, histDigits) }

// newRunGaps is the histogram of one long run's gaps until the run is
// judged: two significant figures, a seventh of newHist's size, since every
// slot may hold one.
func newRunGaps() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, 2) }

// newPointHist is a histogram of one interval of the time series: two
// significant figures, enough for a plot, since every interval merges,
// summarizes and resets one per shard.
func newPointHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, 2) }

// record adds a duration in nanoseconds.
func record(h *hdrhistogram.Histogram, ns int64) {
	us := ns / 1000
	if us > histMaxMicros {
		us = histMaxMicros
	}
	if us < 0 {
		us = 0
	}
	h.RecordValue(us) //nolint:errcheck // clamped into range above
}

// Summary is a timing's distribution, in milliseconds.
type Summary struct {
	N    int64   `json:"n"`
	Min  float64 `json:"min_ms"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	// Histogram counts the values by bucket, from the one holding the
	// least to the one holding the most (whole-load summaries only).
	Histogram []Bucket `json:"histogram,omitempty"`
}

// Bucket is one bar of a histogram: the values over the bucket before's
// upper bound, up to Le (inclusive), in milliseconds.
type Bucket struct {
	Le    float64 `json:"le_ms"`
	Count int64   `json:"count"`
}

// bucketBounds are the histograms' upper bounds in microseconds: 1, 2, 5
// in every decade from 1 µs to an hour.
func bucketBounds() []int64 {
	var b []int64
	for d := int64(1); d < histMaxMicros; d *= 10 {
		b = append(b, d, 2*d, 5*d)
	}
	return append(b, histMaxMicros)
}

// histogram buckets h's values (0 counts in the first bucket).
func histogram(h *hdrhistogram.Histogram) []Bucket {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	bounds := bucketBounds()
	counts := make([]int64, len(bounds))
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i := sort.Search(len(bounds), func(i int) bool { return bounds[i] >= bar.To })
		counts[min(i, len(bounds)-1)] += bar.Count
	}
	lo, hi := 0, len(counts)-1
	for counts[lo] == 0 {
		lo++
	}
	for counts[hi] == 0 {
		hi--
	}
	var out []Bucket
	for i := lo; i <= hi; i++ {
		out = append(out, Bucket{Le: float64(bounds[i]) / 1000, Count: counts[i]})
	}
	return out
}

func summarize(h *hdrhistogram.Histogram) Summary {
	if h == nil || h.TotalCount() == 0 {
		return Summary{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Summary{N: h.TotalCount(), Min: ms(h.Min()), Mean: h.Mean() / 1000,
		P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P95: ms(h.ValueAtQuantile(95)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
}

// hists holds one histogram per timing.
type hists [nTimings]*hdrhistogram.Histogram

func newHists() hists {
	var h hists
	for i := range h {
		h[i] = newHist()
	}
	return h
}

func (h *hists) merge(o *hists) {
	for i := range h {
		h[i].Merge(o[i])
	}
}
