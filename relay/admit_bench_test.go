package relay

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
)

// BenchmarkAdmit costs a run's admission alone (Relay.admit: the input
// read, its members, the versions decided, the judgement and the input
// translation), in process, with no socket: "short" is BenchmarkShortRun's
// input from a 1.0 consumer to a 1.0 producer, "conversation" a 24-message
// input of 11 KB the same way, "inferred" the short input without
// protocolVersion (a 0.0.x client, as CopilotKit 1.75's) toward a 1.0
// producer, which translates it.
//
//	go test -run '^$' -bench Admit ./relay/
func BenchmarkAdmit(b *testing.B) {
	short := `{"threadId":"thread-0123456789","runId":"run-0123456789","protocolVersion":"1.0","state":{},"messages":[{"id":"u1","role":"user","content":"Hello! What can you do?"}],"tools":[],"context":[],"forwardedProps":{}}`
	for _, c := range []struct {
		name, in string
		consumer negotiate.Version
	}{
		{"short", short, negotiate.Current},
		{"conversation", testkit.ConversationInput(), negotiate.Current},
		{"inferred", strings.Replace(short, `"protocolVersion":"1.0",`, "", 1), negotiate.Version{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := &Relay{Upstream: "http://127.0.0.1:1", ConsumerVersion: c.consumer, ProducerVersion: negotiate.Current}
			r.once.Do(r.init)
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(fasthttp.MethodPost)
			ctx.Request.SetBodyString(c.in)
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for b.Loop() {
				rep := RunReport{}
				if _, _, ok := r.admit(&ctx, &rep); !ok {
					b.Fatalf("refused: %s", ctx.Response.Body())
				}
			}
		})
	}
}
