package main

import "testing"

// Each round's figure is divided by the other case's in the same round,
// and the summary's median is the middle ratio (the mean of the two middle
// ones for an even count), its range the least and greatest.
func TestRatiosAndSummary(t *testing.T) {
	r := ratios([]float64{22, 18, 30, 10}, []float64{20, 20, 20, 0})
	if len(r) != 3 || r[0] != 1.1 || r[1] != 0.9 || r[2] != 1.5 {
		t.Fatalf("ratios %v", r)
	}
	want := "a / b CPU per event: median ×1.100, range ×0.900–1.500 over 3 rounds (1.10 0.90 1.50)"
	if got := summary("a", "b", r); got != want {
		t.Errorf("summary\n %s\nwant\n %s", got, want)
	}
	if got := summary("a", "b", []float64{1, 2}); got != "a / b CPU per event: median ×1.500, range ×1.000–2.000 over 2 rounds (1.00 2.00)" {
		t.Errorf("even count: %s", got)
	}
}

// perf stat's CSV lines become counts per relayed event; lines that are
// not counts are left out.
func TestPerEvent(t *testing.T) {
	csv := "2000,,raw_syscalls:sys_enter,4000000,100.00,,\n" +
		"100,,context-switches,4000000,100.00,,\n" +
		"<not counted>,,syscalls:sys_enter_futex,0,0.00,,\n" +
		"\n"
	if got := perEvent(csv, 1000); got != "sys_enter 2.000, context-switches 0.100" {
		t.Errorf("got %q", got)
	}
}
