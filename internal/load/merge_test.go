package load

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// resultOf is a finished result whose runs took the given times, in µs,
// for every timing.
func resultOf(started time.Time, seconds float64, conc int, us ...int64) *Result {
	r := &Result{Started: started, Seconds: seconds, Concurrency: conc, Runs: int64(len(us)), Complete: int64(len(us)), hists: newHists()}
	for _, v := range us {
		for _, h := range r.hists {
			record(h, v*1000)
		}
	}
	r.finish()
	return r
}

// A result's histograms go through JSON and back exactly: the summaries
// of the decoded ones are the original's.
func TestHDRRoundTrip(t *testing.T) {
	r := resultOf(time.Now(), 1, 1, 5, 17, 230, 4100, 4100, 99_000, 1_234_567)
	enc, err := r.HDR()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r)
	var back Result
	json.Unmarshal(js, &back)
	if h, _ := back.HDR(); h != nil {
		t.Fatal("a result read from JSON has histograms before SetHDR")
	}
	if err := back.SetHDR(enc); err != nil {
		t.Fatal(err)
	}
	for _, tm := range Timings() {
		if a, b := r.Summary(tm), back.Summary(tm); a.N != b.N || a.P50 != b.P50 || a.P99 != b.P99 || a.Max != b.Max || a.Min != b.Min || len(a.Histogram) != len(b.Histogram) {
			t.Errorf("%s: %+v, decoded %+v", tm, a, b)
		}
	}
	// Histograms of another range or precision would not add up exactly.
	other := hdrhistogram.New(1, 1000, 2)
	other.RecordValue(5)
	b, _ := other.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	bad := map[string]string{}
	for k, v := range enc {
		bad[k] = v
	}
	bad["gap"] = string(b)
	if err := back.SetHDR(bad); err == nil {
		t.Error("a histogram of another range was taken")
	}
	delete(bad, "gap")
	if err := back.SetHDR(bad); err == nil {
		t.Error("a missing histogram was not noticed")
	}
}

// Results of loads run at once add up: the percentiles are the union's,
// the concurrency the sum, the duration the span of both.
func TestMergeConcurrent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fast := resultOf(t0.Add(time.Second), 2, 2, 100, 110, 120, 130, 140, 150, 160, 170)
	slow := resultOf(t0, 2.5, 3, 9000, 9100)
	m := MergeConcurrent([]*Result{fast, slow})
	union := newHist()
	for _, v := range []int64{100, 110, 120, 130, 140, 150, 160, 170, 9000, 9100} {
		union.RecordValue(v)
	}
	s := m.Summary(FirstEvent)
	if s.N != 10 || s.P50 != float64(union.ValueAtQuantile(50))/1000 || s.P90 != float64(union.ValueAtQuantile(90))/1000 || s.Max != float64(union.Max())/1000 {
		t.Errorf("merged %+v, want the union's p50 %d µs, p90 %d µs", s, union.ValueAtQuantile(50), union.ValueAtQuantile(90))
	}
	if m.Runs != 10 || m.Concurrency != 5 || m.Seconds != 3 || !m.Started.Equal(t0) || m.RunsSec != 10.0/3 || m.Series != nil {
		t.Errorf("merged runs %d, concurrency %d, %gs from %v, %g runs/s", m.Runs, m.Concurrency, m.Seconds, m.Started, m.RunsSec)
	}
	if fast.Runs != 8 || fast.Summary(FirstEvent).N != 8 {
		t.Error("MergeConcurrent changed a part")
	}
}
