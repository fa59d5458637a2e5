//go:build unix

package relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// holdingProducer answers each run with a chunked event stream written by
// respond, then keeps the connection open, as many agents do after
// RUN_FINISHED, until the relay closes it: closed then receives.
func holdingProducer(t *testing.T, respond func(w io.Writer)) (url string, closed chan struct{}) {
	t.Helper()
	closed = make(chan struct{}, 8)
	url = "http://" + testkit.AcceptEach(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body) //nolint:errcheck
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		done := make(chan struct{})
		go func() { // the relay closing the connection is the end
			io.Copy(io.Discard, br) //nolint:errcheck
			close(done)
		}()
		respond(chunkWriter{c, done})
		<-done
		closed <- struct{}{}
	})
	return url, closed
}

// chunkWriter writes each Write as one HTTP/1.1 chunk; it fails once the
// connection is done.
type chunkWriter struct {
	c    net.Conn
	done chan struct{}
}

func (w chunkWriter) Write(p []byte) (int, error) {
	select {
	case <-w.done:
		return 0, io.ErrClosedPipe
	default:
	}
	_, err := io.WriteString(w.c, strconv.FormatInt(int64(len(p)), 16)+"\r\n"+string(p)+"\r\n")
	return len(p), err
}

func runEvents(runID string) string {
	return "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"" + runID + "\",\"protocolVersion\":\"1.0\"}\n\n" +
		"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m-" + runID + "\",\"role\":\"assistant\"}\n\n" +
		"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-" + runID + "\",\"delta\":\"hi\"}\n\n" +
		"data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m-" + runID + "\"}\n\n" +
		"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"" + runID + "\"}\n\n"
}

// After the terminal event of the run the input asked for, the relay ends
// the consumer's response within a short grace and closes the producer's
// connection, though the producer keeps it open, silent or with keep-alive
// comments; the run counts as finished, not timed out. A stream that
// replays earlier runs of the thread first carries them all (issue #24,
// item 4; spec 003: the requested run is the exchange's last).
func TestStreamEndsAfterTheRequestedRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(w io.Writer)
		want    string // the events the consumer reads
	}{
		{"silent after RUN_FINISHED", func(w io.Writer) { io.WriteString(w, runEvents("r1")) }, runEvents("r1")},
		{"keep-alive comments after RUN_FINISHED", func(w io.Writer) {
			io.WriteString(w, runEvents("r1"))
			for { // as an agent's heartbeat does, until the relay lets go
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					return
				}
				time.Sleep(5 * time.Millisecond) // the producer's pace, not a synchronisation
			}
		}, runEvents("r1")},
		{"replayed runs first", func(w io.Writer) {
			io.WriteString(w, runEvents("r0"))
			time.Sleep(50 * time.Millisecond) // a replay, then the agent thinks (longer than the test's grace)
			io.WriteString(w, runEvents("r1"))
		}, runEvents("r0") + runEvents("r1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, closed := holdingProducer(t, tc.respond)
			reports := make(chan *RunReport, 4)
			addr, _ := rawRelay(t, url, reportsTo(reports), func(r *Relay) {
				r.IdleTimeout, r.RunTimeout = time.Hour, time.Hour
				endingWithin(r, time.Millisecond)
			})
			c := testkit.DialConsumer(t, addr)
			testkit.SendRun(t, c, `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`)
			_, body := testkit.ReadResponse(t, c) // ends only with the answer's end
			got := strings.ReplaceAll(body, ": keep-alive\n\n", "")
			if got != tc.want {
				t.Errorf("the consumer read\n%q\nwant\n%q", got, tc.want)
			}
			testkit.Await(t, closed, "the producer's connection stays open after the requested run ended")
			rep := testkit.Await(t, reports, "no run report")
			if rep.Abort != "" || rep.Terminal != "RUN_FINISHED" || rep.Runs != strings.Count(tc.want, "RUN_STARTED") {
				t.Errorf("report: abort %q, terminal %q, runs %d; want a finished run", rep.Abort, rep.Terminal, rep.Runs)
			}
		})
	}
}
