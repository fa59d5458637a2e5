//go:build unix

package relay

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A producer that sends more bytes than its Content-Length has lied about
// its response: what the length covers ends inside an event, which the relay
// must not complete into one the producer never sent. The frames before
// it are relayed, then, the run being open, RUN_ERROR upstream_broken, and
// the stream ends (issue #24, item 6). Blank lines after the body, which
// broken servers leave, are not data: the run ends as it was.
func TestProducerPastItsContentLength(t *testing.T) {
	events := runEvents("r1")
	cut := strings.Index(events, `data: {"type":"RUN_FINISHED"`) + len(`data: {"type":"RUN_FIN`)
	for _, tc := range []struct {
		name   string
		length int
		sent   string
		want   string // what the consumer reads before any RUN_ERROR
		broken bool
	}{
		{"more than the length, cut inside an event", cut, events, events[:strings.Index(events, `data: {"type":"RUN_FINISHED"`)], true},
		{"blank lines after the body", len(events), events + "\r\n", events, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := testkit.RawProducer(t, func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(tc.length)+"\r\n\r\n"+tc.sent)
			})
			reports := make(chan *RunReport, 2)
			addr, _ := rawRelay(t, upstream, reportsTo(reports))
			c := testkit.DialConsumer(t, addr)
			testkit.SendRun(t, c, `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`)
			_, body := testkit.ReadResponse(t, c)
			rep := testkit.Await(t, reports, "no run report")
			if !tc.broken {
				if body != tc.want || rep.Abort != "" || rep.Terminal != "RUN_FINISHED" {
					t.Errorf("abort %q terminal %q, body\n%q\nwant\n%q", rep.Abort, rep.Terminal, body, tc.want)
				}
				return
			}
			if !strings.HasPrefix(body, tc.want) || strings.Contains(body, `"RUN_FIN"`) || strings.Contains(body, `{"type":"RUN_FIN`+"\n") {
				t.Errorf("the consumer read\n%q\nwant the frames before the cut, nothing of the cut one", body)
			}
			rest := body[len(tc.want):]
			if !strings.HasPrefix(rest, `data: {"type":"RUN_ERROR"`) || !strings.Contains(rest, `"code":"upstream_broken"`) || strings.Count(rest, "\n\n") != 1 {
				t.Errorf("after the frames: %q, want one RUN_ERROR upstream_broken", rest)
			}
			if rep.Abort != CodeUpstreamBroken {
				t.Errorf("abort %q, want upstream_broken", rep.Abort)
			}
		})
	}
}
