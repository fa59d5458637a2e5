package harness

import (
	"math"
	"strings"
	"testing"
)

// An exposition as agui-relay writes it: two routes, other metrics around.
const twoRoutes = `# HELP agui_relay_event_latency_seconds Relay latency per event.
# TYPE agui_relay_event_latency_seconds histogram
agui_relay_event_latency_seconds_bucket{route="a",le="1e-05"} 10
agui_relay_event_latency_seconds_bucket{route="a",le="2.5e-05"} 80
agui_relay_event_latency_seconds_bucket{route="a",le="0.0001"} 95
agui_relay_event_latency_seconds_bucket{route="a",le="+Inf"} 100
agui_relay_event_latency_seconds_sum{route="a"} 0.01
agui_relay_event_latency_seconds_count{route="a"} 100
agui_relay_event_latency_seconds_bucket{route="b",le="1e-05"} 0
agui_relay_event_latency_seconds_bucket{route="b",le="2.5e-05"} 0
agui_relay_event_latency_seconds_bucket{route="b",le="0.0001"} 0
agui_relay_event_latency_seconds_bucket{route="b",le="+Inf"} 100
agui_relay_event_latency_seconds_sum{route="b"} 2
agui_relay_event_latency_seconds_count{route="b"} 100
agui_relay_events_total{route="a",direction="to_consumer",type="RUN_STARTED"} 5
agui_relay_event_latency_seconds_bucket_extra{le="1"} 7
`

func TestParseBucketsSumsRoutes(t *testing.T) {
	b, err := parseBuckets(strings.NewReader(twoRoutes), relayLatencyMetric)
	if err != nil {
		t.Fatal(err)
	}
	wantLE := []float64{1e-5, 2.5e-5, 1e-4, math.Inf(1)}
	wantN := []uint64{10, 80, 95, 200}
	if len(b.le) != len(wantLE) {
		t.Fatalf("bounds %v, want %v", b.le, wantLE)
	}
	for i := range wantLE {
		if b.le[i] != wantLE[i] || b.n[i] != wantN[i] {
			t.Fatalf("buckets %v %v, want %v %v", b.le, b.n, wantLE, wantN)
		}
	}
	if q, _ := b.upperQuantile(0.40); q != 2.5e-5 {
		t.Errorf("p40 ≤ %g, want 2.5e-05 (80 of 200 at or under it)", q)
	}
	if q, _ := b.upperQuantile(0.99); !math.IsInf(q, 1) {
		t.Errorf("p99 ≤ %g, want +Inf (105 of 200 past 100 µs)", q)
	}
}

func TestOwnLatencyIsTheWindowsDifference(t *testing.T) {
	before := buckets{le: []float64{1e-5, 1e-4, math.Inf(1)}, n: []uint64{100, 100, 100}}
	after := buckets{le: before.le, n: []uint64{101, 199, 200}}
	n, p50, p99, err := ownLatency(before, after)
	if err != nil {
		t.Fatal(err)
	}
	// In the window: 1 under 10 µs, 98 under 100 µs, 1 over.
	if n != 100 || math.Abs(p50-100) > 1e-9 || math.Abs(p99-100) > 1e-9 {
		t.Errorf("n %d p50 %g p99 %g µs, want 100, 100, 100", n, p50, p99)
	}
	after.n[2] = 300 // 101 past the last finite bound
	if _, _, p99, _ = ownLatency(before, after); p99 != -1 {
		t.Errorf("p99 %g, want -1 (past the last finite bucket)", p99)
	}
	if n, _, _, err := ownLatency(before, before); err != nil || n != 0 {
		t.Errorf("an empty window: n %d, err %v", n, err)
	}
}

func TestOwnLatencyRefusesWhatDoesNotAddUp(t *testing.T) {
	before := buckets{le: []float64{1e-5, math.Inf(1)}, n: []uint64{5, 10}}
	if _, _, _, err := ownLatency(before, buckets{le: before.le, n: []uint64{1, 2}}); err == nil {
		t.Error("a histogram that went back was taken")
	}
	if _, _, _, err := ownLatency(before, buckets{le: []float64{1e-4, math.Inf(1)}, n: []uint64{5, 10}}); err == nil {
		t.Error("changed buckets were taken")
	}
	for _, text := range []string{
		"",
		`agui_relay_event_latency_seconds_bucket{route="a",le="1e-05"} 3` + "\n",
		`agui_relay_event_latency_seconds_bucket{route="a"} 3` + "\n",
		`agui_relay_event_latency_seconds_bucket{route="a",le="x"} 3` + "\n",
	} {
		if _, err := parseBuckets(strings.NewReader(text), relayLatencyMetric); err == nil {
			t.Errorf("parsed %q", text)
		}
	}
}
