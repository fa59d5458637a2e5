//go:build unix

package relay

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
)

// goroutineID is the running goroutine's number, from its stack's header.
func goroutineID() int {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	return id
}

// The runs of a persistent connection are carried by one goroutine: the one that
// ran a stream serves the consumer's next request and runs the stream that
// answers it, also after a request answered without a stream (a refused
// input), instead of a new goroutine per run growing its stack again.
func TestPersistentConnectionRunsOnOneGoroutine(t *testing.T) {
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHeader+"\r\n"+chunk(shortRunEvents)+"0\r\n\r\n") //nolint:errcheck
	})
	ran := make(chan int, 8)
	addr, _ := rawRelay(t, upstream, func(*RunReport) { ran <- goroutineID() })
	c := testkit.DialConsumer(t, addr)
	br := bufio.NewReader(c)
	response := func(wantStatus int) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != wantStatus {
			t.Fatalf("response %d %q: %v", resp.StatusCode, body, err)
		}
		if wantStatus == 200 && string(body) != shortRunEvents {
			t.Fatalf("body %q", body)
		}
	}
	var ids []int
	for i, input := range []string{testkit.MinimalInput, testkit.MinimalInput, `{"threadId":1}`, testkit.MinimalInput, testkit.MinimalInput} {
		testkit.SendRun(t, c, input)
		if i == 2 {
			response(400)
			continue
		}
		response(200)
		select {
		case id := <-ran:
			ids = append(ids, id)
		case <-time.After(testkit.Liveness):
			t.Fatal("no run report")
		}
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("the runs ran on goroutines %v", ids)
		}
	}
}

// A stream that parks between events is woken on a new goroutine, which
// then carries the connection's next runs.
func TestParkedStreamCarriesTheNextRun(t *testing.T) {
	pk := signalParker{make(chan struct{}, 16)}
	upstream := testkit.RawProducer(t, func(c net.Conn) {
		io.WriteString(c, streamHeader+"\r\n"+chunk(shortRunEvents[:len(shortRunEvents)/2])) //nolint:errcheck
		select {
		case <-pk.parked: // the stream parks
		case <-time.After(testkit.Liveness):
			t.Error("the stream did not park")
		}
		io.WriteString(c, chunk(shortRunEvents[len(shortRunEvents)/2:])+"0\r\n\r\n") //nolint:errcheck
	})
	parked := make(chan bool, 4)
	addr, _ := rawRelay(t, upstream, func(*RunReport) { parked <- testkit.GoroutinesIn("relay.(*relayedStream).resume") > 0 },
		func(r *Relay) { parkingAfter(r, time.Millisecond); armingWith(r, pk.arm) })
	c := testkit.DialConsumer(t, addr)
	br := bufio.NewReader(c)
	for range 3 {
		testkit.SendRun(t, c, testkit.MinimalInput)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != shortRunEvents {
			t.Fatalf("body %q: %v", body, err)
		}
		select {
		case p := <-parked:
			if !p {
				t.Fatal("the stream did not park and resume")
			}
		case <-time.After(testkit.Liveness):
			t.Fatal("no run report")
		}
	}
}

// signalParker parks as the Relay's Poller does (armingWith), and tells
// parked each time a stream parked.
type signalParker struct{ parked chan struct{} }

func (p signalParker) arm(pl *wire.Poller, rc syscall.RawConn, token int32, deadline time.Time) bool {
	ok := pl.ArmRead(rc, token, deadline)
	if ok {
		select {
		case p.parked <- struct{}{}:
		default:
		}
	}
	return ok
}
