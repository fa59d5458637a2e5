package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/synth"
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

func TestClientReportsHTTPErrors(t *testing.T) {
	p := testProducer(t)
	c := &Client{Addr: p.Addr(), Timeout: 5 * time.Second}
	defer c.Close()
	status, err := c.Run("/run?events=x", Input("r"), func([]byte) {})
	if status != 400 || err == nil || !strings.Contains(err.Error(), "events") {
		t.Errorf("status %d, err %v", status, err)
	}
	// The connection stays usable after an error answer.
	n := 0
	if _, err := c.Run(synth.RunParams{Events: 10}.Path(), Input("r"), func(b []byte) { n += len(b) }); err != nil || n == 0 {
		t.Errorf("second run: %v, %d bytes", err, n)
	}
}
