package load

import (
	"reflect"
	"testing"
)

// An interval's first times summarize alike whether they were kept as
// they came or, past maxRawFirsts, in a histogram, which then holds what
// an interval keeps however many runs it saw.
func TestPendingFirstsSummarizeAlikeKeptEitherWay(t *testing.T) {
	for _, n := range []int{1, maxRawFirsts, maxRawFirsts + 1, 5 * maxRawFirsts} {
		var p pendingFirsts
		want := newPointHist()
		for i := 0; i < n; i++ {
			ns := int64(1000 + (i*7919)%3_000_000) // 1 µs to 3 ms, spread
			p.add(0, ns)
			p.add(1, 2*ns)
			record(want, ns)
		}
		if got := p.summary(0, newPointHist()); !reflect.DeepEqual(got, summarize(want)) {
			t.Errorf("%d times: %+v, want %+v", n, got, summarize(want))
		}
		if kept := len(p.raw[0]); n > maxRawFirsts && (kept != 0 || p.hist[0] == nil) || n <= maxRawFirsts && kept != n {
			t.Errorf("%d times: %d kept as they came, histogram %v", n, kept, p.hist[0] != nil)
		}
	}
}
