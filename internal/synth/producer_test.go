package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agui-relay/agui-relay/event"
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
			resp, err := cl.Post("http://"+p.Addr()+rp.Path(), "application/json", strings.NewReader(`{"threadId":"t","runId":"r1","messages":[]}`))
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
			pending := splitEvents(t, body, func(ev []byte) {
				if !json.Valid(ev) {
					t.Errorf("%s: invalid JSON event %s", d, ev)
				}
				chk.Event(ev)
			})
			if pending {
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

// The pacer's short waits last at least what was asked (a stream's
// events never leave early), and a closed timer ends a wait with an error
// instead of hanging.
func TestFineTimer(t *testing.T) {
	ft, err := newFineTimer()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Microsecond, 150 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := ft.sleep(d); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < d {
			t.Fatalf("a %v wait took %v", d, took)
		}
	}
	ft.Close()
	if err := ft.sleep(time.Millisecond); err == nil && fineTimerClosable {
		t.Fatal("a closed timer still waits")
	}
}

// Closing the pacer ends its goroutine and fails the runs it still holds,
// so that their handlers return, and a run added afterwards fails at once.
func TestPacerCloseFailsHeldRuns(t *testing.T) {
	pc := &pacer{wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	pc.fine, _ = newFineTimer()
	go pc.run()
	held := &pacedJob{done: make(chan error, 1)}
	pc.add(held, time.Now().Add(time.Hour))
	pc.close()
	select {
	case <-pc.exited:
	default:
		t.Fatal("close returned before the pacer's goroutine ended")
	}
	if err := <-held.done; err != errPacerStopped {
		t.Fatalf("held run ended with %v", err)
	}
	late := &pacedJob{done: make(chan error, 1)}
	pc.add(late, time.Now())
	if err := <-late.done; err != errPacerStopped {
		t.Fatalf("a run added after close ended with %v", err)
	}
}

// splitEvents hands onEvent the data of every event of stream, split as the
// relay splits it, and reports whether stream ends inside a frame.
func splitEvents(t *testing.T, stream []byte, onEvent func([]byte)) (pending bool) {
	t.Helper()
	sc := event.NewScanner(nil, 0)
	if err := sc.Push(stream, func(f event.Frame) {
		if f.HasData() {
			onEvent(f.Data)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return sc.Buffered() > 0
}

// The producer reads a chunked request body (wire.Framing) up to its end,
// and the next request on the connection after it, in any pieces.
func TestReadRequestChunkedThenNext(t *testing.T) {
	body := `{"threadId":"t","runId":"run-chunked","messages":[]}`
	in := "POST /run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", 10, body[:10], len(body)-10, body[10:]) +
		"POST /run?events=3 HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + `{"runId":"run-next"}`
	for _, size := range []int{len(in), 5, 1} {
		br := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(in)), 64)
		if size > 1 {
			br = bufio.NewReaderSize(&pieces{s: in, n: size}, 64)
		}
		first, err := readRequest(br)
		if err != nil || first.runID != "run-chunked" {
			t.Fatalf("reads of %d: first request %+v, %v", size, first, err)
		}
		next, err := readRequest(br)
		if err != nil || next.runID != "run-next" || next.target != "/run?events=3" {
			t.Fatalf("reads of %d: next request %+v, %v", size, next, err)
		}
	}
	bad := "POST /run HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"
	if _, err := readRequest(bufio.NewReader(strings.NewReader(bad))); err == nil {
		t.Error("a chunk size line ending in a bare LF was read")
	}
}

// pieces reads s n bytes at a time.
type pieces struct {
	s string
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[k:]
	return k, nil
}
