package harness

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
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

// parseBuckets reads the _bucket series of histogram name from Prometheus's
// text format, summing series that differ in other labels.
func parseBuckets(r io.Reader, name string) (buckets, error) {
	byLE := map[float64]uint64{}
	prefix := name + "_bucket{"
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		i := strings.Index(line, `le="`)
		if end < 0 || i < 0 || i > end {
			return buckets{}, fmt.Errorf("%s: no le label in %q", name, line)
		}
		les := line[i+4:]
		les = les[:strings.IndexByte(les, '"')]
		le, err := strconv.ParseFloat(les, 64) // "+Inf" parses as +Inf
		if err != nil {
			return buckets{}, fmt.Errorf("%s: le %q: %v", name, les, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return buckets{}, fmt.Errorf("%s: count in %q: %v", name, line, err)
		}
		byLE[le] += uint64(v)
	}
	if err := sc.Err(); err != nil {
		return buckets{}, err
	}
	if len(byLE) == 0 {
		return buckets{}, fmt.Errorf("no %s histogram", name)
	}
	var b buckets
	for le := range byLE {
		b.le = append(b.le, le)
	}
	slices.Sort(b.le)
	if !math.IsInf(b.le[len(b.le)-1], 1) {
		return buckets{}, fmt.Errorf("%s: no +Inf bucket", name)
	}
	for _, le := range b.le {
		b.n = append(b.n, byLE[le])
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
