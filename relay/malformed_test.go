package relay

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A producer's response whose header cannot be parsed is a 502 typed
// upstream-malformed whose detail names the fault alone: none of the
// producer's bytes reach the consumer, and the log keeps at most a short
// escaped excerpt of them, where fasthttp's error quoted 1.3 KB of the
// producer's header and body (issue #31).
func TestMalformedProducerHeaderIsNamedNotEchoed(t *testing.T) {
	const secret = "pr0ducer-S3CRET"
	pad := "X-Pad: " + strings.Repeat("p", 1200) + "\r\nX-Secret: " + secret + "\r\n"
	body := "data: " + secret + "\n\n"
	for _, tc := range []struct{ name, header, kind string }{
		{"status 2OO", "HTTP/1.1 2OO OK\r\nContent-Type: text/event-stream\r\n" + pad, "invalid status code"},
		{"two Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 20\r\nContent-Length: 21\r\n" + pad, "more than one Content-Length"},
		{"no space in the status line", "HTTP/1.1\r\nContent-Type: text/event-stream\r\n" + pad, "malformed status line"},
		{"header line without a colon", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + pad + "NoColon\r\n", "header line without a colon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			producer := testkit.RawProducer(t, func(c net.Conn) {
				io.WriteString(c, tc.header+"\r\n"+body)
			})
			h := newHarness(t, nil, func(r *Relay) { r.Upstream = producer })
			for _, send := range []func() (int, Problem){
				func() (int, Problem) {
					resp := h.post("/agent", testkit.MinimalInput)
					return resp.StatusCode, problemOf(t, resp)
				},
				func() (int, Problem) {
					resp, err := h.consumer.Get(h.url + "/x")
					if err != nil {
						t.Fatal(err)
					}
					return resp.StatusCode, problemOf(t, resp)
				},
			} {
				status, p := send()
				if status != 502 || p.Type != "urn:agui-relay:upstream-malformed" || p.Detail != "the producer's response cannot be parsed: "+tc.kind {
					t.Errorf("status %d, problem %+v; want 502 upstream-malformed naming %q", status, p, tc.kind)
				}
			}
			logged := 0
			for _, e := range h.logs.All() {
				line := e.Message
				for k, v := range e.ContextMap() {
					line += " " + k + "=" + toString(v)
				}
				if strings.Contains(line, secret) || strings.Contains(line, "ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp") {
					t.Errorf("a log line repeats the producer's bytes: %.300s", line)
				}
				if strings.Contains(line, tc.kind) {
					logged++
				}
			}
			if logged < 2 {
				t.Errorf("%d log lines name the fault, want one for the run and one for the proxied request", logged)
			}
		})
	}
}
