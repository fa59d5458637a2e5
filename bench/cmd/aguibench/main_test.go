package main

import (
	"slices"
	"testing"

	"github.com/agui-relay/agui-relay/bench/harness"
)

// The workload flags name workloads (all: every one), scale the second
// workloads where given and keep the mode's size where not; a bad name or
// count is an error.
func TestSecondFlags(t *testing.T) {
	cfg := harness.FullConfig()
	long := 0
	err := secondFlags(&cfg, "long, runs,long", "100,250.5", 3, []struct {
		v   int
		dst *int
	}{{7, &cfg.Second.RunEvents}, {long, &cfg.Second.LongEvents}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Workloads, []string{"long", "runs"}) || cfg.Second.RunEvents != 7 || cfg.Second.LongEvents != 40000 ||
		!slices.Equal(cfg.Second.FirstRates, []float64{100, 250.5}) || cfg.Second.FirstSeconds != 3 {
		t.Errorf("%v %+v", cfg.Workloads, cfg.Second)
	}
	if err := secondFlags(&cfg, "all", "", 0, nil); err != nil || !slices.Equal(cfg.Workloads, harness.Workloads()) {
		t.Errorf("all: %v %v", cfg.Workloads, err)
	}
	for _, bad := range []struct{ w, rates string }{{"bench,lng", ""}, {"long", "0"}, {"long", "x"}} {
		if err := secondFlags(&cfg, bad.w, bad.rates, 0, nil); err == nil {
			t.Errorf("%q %q accepted", bad.w, bad.rates)
		}
	}
	if err := secondFlags(&cfg, "runs", "", 0, []struct {
		v   int
		dst *int
	}{{-1, &cfg.Second.Rounds}}); err == nil {
		t.Error("a negative count accepted")
	}
}
