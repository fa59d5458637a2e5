package metrics

import (
	"math"
	"sort"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// batchHistogram is a histogram whose observations come in batches of one
// value: the events one read completed share that read's latency. A batch
// costs what one observation does (a bucket, the sum), where a
// prometheus.Histogram takes each event of it on its own. It is
// exposed as a constant histogram at each scrape (latencyCollector).
// It is safe for concurrent use.
type batchHistogram struct {
	upper  []float64       // the buckets' upper bounds, ascending
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf's
	sum    atomic.Uint64   // float64 bits
}

func newBatchHistogram(upper []float64) *batchHistogram {
	return &batchHistogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

// observeN counts n observations of v.
func (h *batchHistogram) observeN(v float64, n int) {
	if n <= 0 {
		return
	}
	// The first bound v does not exceed, as Prometheus's buckets count
	// (le: less than or equal).
	h.counts[sort.SearchFloat64s(h.upper, v)].Add(uint64(n))
	for add := v * float64(n); ; {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+add)) {
			return
		}
	}
}

// metric returns the histogram as it is now. The count is the buckets'
// total, so a scrape during an observation never sees more in the buckets
// than in the count.
func (h *batchHistogram) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.upper))
	var cumulative uint64
	for i, le := range h.upper {
		cumulative += h.counts[i].Load()
		buckets[le] = cumulative
	}
	count := cumulative + h.counts[len(h.upper)].Load()
	return prometheus.MustNewConstHistogram(desc, count, math.Float64frombits(h.sum.Load()), buckets, labels...)
}

// latencyCollector exports each route's event latency histogram.
type latencyCollector struct{ m *Metrics }

var eventLatencyDesc = prometheus.NewDesc("agui_relay_event_latency_seconds",
	"Relay latency per event: from the read that completed the event's frame to the flush that wrote it to the consumer; sampled, the events of one read in 8.",
	[]string{"route"}, nil)

var eventLatencyBuckets = [...]float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}

func (c latencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- eventLatencyDesc }

func (c latencyCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	routes := make([]*routeMetrics, 0, len(c.m.routes))
	for _, rm := range c.m.routes {
		routes = append(routes, rm)
	}
	c.m.mu.Unlock()
	for _, rm := range routes {
		ch <- rm.eventLatency.metric(eventLatencyDesc, rm.name)
	}
}
