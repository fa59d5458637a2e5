package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"testing"
	"time"
)

// testProducer starts a producer on a free port until the test ends.
func testProducer(t *testing.T) *Producer {
	t.Helper()
	p, err := StartProducer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestProducerFramingThroughNetHTTP reads runs from the producer with
// net/http's client, on one kept-alive connection: the chunked framing must
// be valid HTTP/1.1, every frame a JSON event, every stamp in order.
func TestProducerFramingThroughNetHTTP(t *testing.T) {
	p := testProducer(t)
	p.FlushBytes = 1 << 10
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}}
	for _, d := range []Dialect{Dialect10, DialectLegacy, DialectThinking} {
		for run := 0; run < 30; run++ {
			rp := RunParams{Dialect: d, Events: 400}
			resp, err := cl.Post("http://"+p.Addr()+rp.Path(), "application/json", bytes.NewReader(Input("r1")))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s run %d: %v", d, run, err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("content type %q", ct)
			}
			plan := NewPlan(d, 400)
			chk := NewRunCheck(plan, true)
			sp := &FrameSplitter{OnEvent: func(ev []byte) {
				if !json.Valid(ev) {
					t.Errorf("%s: invalid JSON event %s", d, ev)
				}
				chk.Event(ev)
			}}
			sp.Write(body)
			if sp.Pending() {
				t.Errorf("%s: stream ends inside a frame", d)
			}
			if err := chk.Err(); err != nil {
				t.Errorf("%s run %d: %v", d, run, err)
			}
		}
	}
}

func TestPacedHeapOrder(t *testing.T) {
	var h pacedHeap
	base := time.Now()
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 500; i++ {
		h.push(pacedItem{due: base.Add(time.Duration(r.Intn(1000)) * time.Microsecond)})
	}
	prev := base
	for len(h) > 0 {
		it := h.pop()
		if it.due.Before(prev) {
			t.Fatalf("popped %v after %v", it.due.Sub(base), prev.Sub(base))
		}
		prev = it.due
	}
}
