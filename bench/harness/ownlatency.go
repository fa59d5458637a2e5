package harness

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// relayLatencyMetric is agui-relay's own latency histogram: per event, from
// the read that completed its frame to the flush that wrote it to the
// consumer (sampled, one read in eight). It leaves out what the end-to-end
// figure is mostly made of on a shared machine: the wait for a CPU before
// the read and after the write.
const relayLatencyMetric = "agui_relay_event_latency_seconds"

// buckets is a Prometheus histogram: cumulative counts by upper bound,
// ascending, +Inf last.
type buckets struct {
	le []float64
	n  []uint64
}

// scrapeOwnLatency reads relayLatencyMetric from an agui-relay's admin
// address, summed over its routes.
func scrapeOwnLatency(admin string) (buckets, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + admin + "/metrics")
	if err != nil {
		return buckets{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return buckets{}, fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
	}
	return parseBuckets(resp.Body, relayLatencyMetric)
}

// parseBuckets reads histogram name from Prometheus's text format, summing
// the series that differ in other labels (agui-relay's routes).
func parseBuckets(r io.Reader, name string) (buckets, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return buckets{}, err
	}
	fam := fams[name]
	if fam == nil || fam.GetType() != dto.MetricType_HISTOGRAM || len(fam.GetMetric()) == 0 {
		return buckets{}, fmt.Errorf("no %s histogram", name)
	}
	var b buckets
	for i, m := range fam.GetMetric() {
		h := m.GetHistogram()
		var le []float64
		for _, bk := range h.GetBucket() {
			if bk.GetCumulativeCount() > h.GetSampleCount() {
				return buckets{}, fmt.Errorf("%s: a bucket counts more than the whole", name)
			}
			if !math.IsInf(bk.GetUpperBound(), 1) {
				le = append(le, bk.GetUpperBound())
			}
		}
		le = append(le, math.Inf(1))
		if i == 0 {
			b = buckets{le: le, n: make([]uint64, len(le))}
		} else if !slices.Equal(le, b.le) {
			return buckets{}, fmt.Errorf("%s: series with different buckets", name)
		}
		for j, bk := range h.GetBucket() {
			if j < len(le)-1 {
				b.n[j] += bk.GetCumulativeCount()
			}
		}
		b.n[len(le)-1] += h.GetSampleCount()
	}
	return b, nil
}

// since returns the counts added after earlier, a reading of the same
// histogram.
func (b buckets) since(earlier buckets) (buckets, error) {
	if !slices.Equal(b.le, earlier.le) {
		return buckets{}, fmt.Errorf("the histogram's buckets changed between readings")
	}
	d := buckets{le: b.le, n: make([]uint64, len(b.n))}
	for i := range b.n {
		if b.n[i] < earlier.n[i] {
			return buckets{}, fmt.Errorf("the histogram went back (a restart?)")
		}
		d.n[i] = b.n[i] - earlier.n[i]
	}
	return d, nil
}

// count is the number of observations.
func (b buckets) count() uint64 {
	if len(b.n) == 0 {
		return 0
	}
	return b.n[len(b.n)-1]
}

// upperQuantile returns the upper bound of the bucket holding quantile q:
// the q-quantile is at most that. ok is false with no observations.
func (b buckets) upperQuantile(q float64) (le float64, ok bool) {
	total := b.count()
	if total == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(total)))
	for i, n := range b.n {
		if n >= rank {
			return b.le[i], true
		}
	}
	return math.Inf(1), true
}

// ownLatency is what RunLoad records of it between two readings: the
// observations and the upper bounds of p50 and p99 in µs, -1 for a quantile
// past the last finite bucket.
func ownLatency(before, after buckets) (n uint64, p50, p99 float64, err error) {
	d, err := after.since(before)
	if err != nil {
		return 0, 0, 0, err
	}
	us := func(q float64) float64 {
		le, _ := d.upperQuantile(q)
		if math.IsInf(le, 1) {
			return -1
		}
		return le * 1e6
	}
	if d.count() == 0 {
		return 0, 0, 0, nil
	}
	return d.count(), us(0.50), us(0.99), nil
}
