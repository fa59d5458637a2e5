//go:build !race

package relay

import "testing"

// Joining a run's taps (serve's metrics, recordings and traces) is one
// allocation a run, and the joined tap calls each tap given, in order,
// nil ones left out.
func TestJoinTapsAllocatesOnce(t *testing.T) {
	var ended []int
	a := endTap{end: func(*RunReport) { ended = append(ended, 1) }}
	b := endTap{end: func(*RunReport) { ended = append(ended, 2) }}
	c := endTap{end: func(*RunReport) { ended = append(ended, 3) }}
	var joined RunTap // kept, as a run keeps its tap
	if n := testing.AllocsPerRun(100, func() { joined = JoinTaps(a, nil, b) }); n != 1 {
		t.Errorf("%v allocations to join two taps, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { joined = JoinTaps(a, b, c) }); n != 1 {
		t.Errorf("%v allocations to join three taps, want 1", n)
	}
	joined = JoinTaps(c, nil, a, b)
	joined.End(&RunReport{})
	if len(ended) != 3 || ended[0] != 3 || ended[1] != 1 || ended[2] != 2 {
		t.Errorf("taps ended %v, want [3 1 2]", ended)
	}
	if JoinTaps(nil, nil) != nil {
		t.Error("no taps joined is not nil")
	}
}
