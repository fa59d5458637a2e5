package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/load"
	"github.com/agui-relay/agui-relay/internal/synth"
)

// testProducer starts the synthetic producer on a free port until the test
// ends.
func testProducer(t *testing.T) *synth.Producer {
	t.Helper()
	p, err := synth.StartProducer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestRunLoadDirect drives the raw client against the producer: runs at
// saturation and paced must all be complete, with latency recorded.
func TestRunLoadDirect(t *testing.T) {
	p := testProducer(t)
	for _, rate := range []float64{0, 1000} {
		plan := p.Plan(synth.DialectLegacy, 60, synth.Mix{})
		r := RunLoad(p.Addr(), nil, plan, Load{Streams: 3, Params: synth.RunParams{Dialect: synth.DialectLegacy, Events: 60, Rate: rate},
			Warmup: 50 * time.Millisecond, Measure: 500 * time.Millisecond, Exact: true})
		if r.RunsOK == 0 || r.RunsBad != 0 || r.RunsFailed != 0 || r.Events == 0 || r.LatencyN == 0 {
			t.Errorf("rate %g: %+v", rate, r)
		}
		if r.CPUPerMEvents != 0 {
			t.Errorf("direct has no proxy CPU, got %g", r.CPUPerMEvents)
		}
	}
}

func TestIdleStreamsOpenAndFinish(t *testing.T) {
	p := testProducer(t)
	r := IdleMemory(&Proc{Addr: p.Addr()}, p, synth.Dialect10, 25, 10*time.Second)
	if r.Opened != 25 || r.Finished != 25 || r.FirstError != "" || r.ProducerIdles != 25 {
		t.Errorf("%+v", r)
	}
	if p.IdleOpen.Load() != 0 {
		t.Errorf("%d idle runs left open", p.IdleOpen.Load())
	}
}

// A run the producer refuses is an error naming its status and reason.
func TestRunOnceReportsHTTPErrors(t *testing.T) {
	p := testProducer(t)
	err := runOnce(&Proc{Addr: p.Addr()}, synth.RunParams{Events: 1}, "r", load.Timeouts{Idle: 5 * time.Second}, func([]byte) {})
	if err == nil || !strings.Contains(err.Error(), "http 400") || !strings.Contains(err.Error(), "events") {
		t.Errorf("err %v", err)
	}
	n := 0
	if err := runOnce(&Proc{Addr: p.Addr()}, synth.RunParams{Events: 10}, "r", load.Timeouts{Idle: 5 * time.Second}, func([]byte) { n++ }); err != nil || n != len(synth.NewPlan(synth.Dialect10, 10).Kinds) {
		t.Errorf("second run: %v, %d events", err, n)
	}
}
