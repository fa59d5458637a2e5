package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// Relay.Handle serves event streams whole on any fasthttp.Server, one that
// closes hijacked connections when their handler returns as well as one
// that keeps them, on the server's own listener: the stream keeps the
// hijack handler's goroutine to its end, through the producer's pauses,
// and its connection is not kept alive for another request.
func TestHandleOnAnOrdinaryServer(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := "closes hijacked connections"
		if keep {
			name = "keeps hijacked connections"
		}
		t.Run(name, func(t *testing.T) { handleOnServer(t, keep) })
	}
}

func handleOnServer(t *testing.T, keepHijacked bool) {
	first := `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n"
	rest := `data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}` + "\n\n" +
		`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}` + "\n\n" +
		`data: {"type":"TEXT_MESSAGE_END","messageId":"m"}` + "\n\n" +
		`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n"
	read := make(chan struct{}, 1) // the consumer read the first event
	producer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		testkit.StreamHeaders(w)
		testkit.SSE(w, first)
		select { // a pause: the producer waits for the consumer
		case <-read:
		case <-time.After(testkit.Liveness):
		}
		testkit.SSE(w, rest)
	}))
	defer producer.Close()
	attempts := noParking{make(chan struct{}, 16)}
	reports := make(chan *RunReport, 4)
	rl := &Relay{
		Upstream:        producer.URL,
		Log:             zap.NewNop(),
		Tap:             onEnd(nil, reportsTo(reports)),
		Poller:          testPoller(t),
		ReuseGoroutines: true,
	}
	parkingAfter(rl, time.Millisecond)
	armingWith(rl, attempts.arm)
	srv := &fasthttp.Server{Handler: rl.Handle, KeepHijackedConns: keepHijacked}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)     //nolint:errcheck
	defer srv.Shutdown() //nolint:errcheck
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for run := range 3 {
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/agent", strings.NewReader(`{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		br := bufio.NewReader(resp.Body)
		got, err := br.ReadString('\n')
		if err != nil || got != strings.TrimSuffix(first, "\n") {
			t.Fatalf("run %d: first line %q, %v", run, got, err)
		}
		read <- struct{}{}
		tail, err := io.ReadAll(br)
		resp.Body.Close()
		if err != nil || got+string(tail) != first+rest {
			t.Fatalf("run %d: stream %q, %v", run, got+string(tail), err)
		}
		if !resp.Close {
			t.Errorf("run %d: the response did not say Connection: close", run)
		}
		select {
		case rep := <-reports:
			if rep.Abort != "" || rep.Events != 5 {
				t.Errorf("run %d: report: abort %q, %d events", run, rep.Abort, rep.Events)
			}
		case <-time.After(testkit.Liveness):
			t.Fatalf("run %d: no report", run)
		}
	}
	select {
	case <-attempts.attempts:
		t.Error("a stream on a server not made by Server tried to park")
	default:
	}
}
