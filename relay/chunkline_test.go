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

// The producer's chunk size lines are read per RFC 9112 over a real
// connection: whitespace before an extension's ';' ("1f ;ext") is allowed
// and the run relayed whole; whitespace after the size with no extension
// ("1f ") is not, and ends the run with RUN_ERROR upstream_broken (issue
// #24, item 6).
func TestChunkSizeLinesFollowRFC9112(t *testing.T) {
	events := runEvents("r1")
	for _, tc := range []struct {
		name, sizeSuffix string
		ok               bool
	}{
		{"whitespace before an extension", " ;ext=1", true},
		{"a tab before an extension", "\t;ext", true},
		{"an extension", ";ext", true},
		{"whitespace, no extension", " ", false},
		{"a tab, no extension", "\t", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := testkit.RawProducer(t, func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
					strconv.FormatInt(int64(len(events)), 16)+tc.sizeSuffix+"\r\n"+events+"\r\n0\r\n\r\n")
			})
			reports := make(chan *RunReport, 2)
			addr, _ := rawRelay(t, upstream, reportsTo(reports))
			c := testkit.DialConsumer(t, addr)
			testkit.SendRun(t, c, `{"threadId":"t1","runId":"r1","messages":[],"protocolVersion":"1.0"}`)
			_, body := testkit.ReadResponse(t, c)
			rep := testkit.Await(t, reports, "no run report")
			if tc.ok {
				if body != events || rep.Abort != "" {
					t.Errorf("want the run relayed whole; got abort %q and\n%q", rep.Abort, body)
				}
				return
			}
			if !strings.Contains(body, `"code":"upstream_broken"`) || rep.Abort != CodeUpstreamBroken {
				t.Errorf("want RUN_ERROR upstream_broken; got abort %q and\n%q", rep.Abort, body)
			}
		})
	}
}
