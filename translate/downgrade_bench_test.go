package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// BenchmarkLegacyDowngrade costs each 0.0.41–0.0.50 event downgrade on an
// event it rewrites (or drops), and on one it only looks at.
func BenchmarkLegacyDowngrade(b *testing.B) {
	snap := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"},"metadata":{"filename":"a.png"}}]},{"id":"r","role":"reasoning","content":"hm"},{"id":"a","role":"activity","activityType":"plan","content":{}}]}`
	cases := []struct {
		name   string
		step   *Step
		target string
		setup  []string
		ev     string
	}{
		{"drop-empty-delta/drop", emptyDelta, "0.0.49", nil, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`},
		{"drop-empty-delta/pass", emptyDelta, "0.0.49", nil, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Hello there"}`},
		{"media-to-binary", mediaToBinary, "0.0.45", nil, snap},
		{"strip-text-name", textName, "0.0.47", nil, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant","name":"Ada"}`},
		{"reasoning-to-thinking/content", reasoningToThinking, "0.0.44",
			[]string{`{"type":"REASONING_MESSAGE_START","messageId":"r","role":"reasoning"}`},
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r","delta":"Let me think about the question."}`},
		{"reasoning-to-thinking/chunk", reasoningToThinking, "0.0.44",
			[]string{`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r","delta":"a"}`},
			`{"type":"REASONING_MESSAGE_CHUNK","delta":"Let me think about the question."}`},
		{"reasoning-to-thinking/unrelated", reasoningToThinking, "0.0.44", nil,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Hello there"}`},
		{"reasoning-to-thinking/snapshot", reasoningToThinking, "0.0.44", nil, snap},
		{"drop-activity/snapshot", activityDrop, "0.0.40", nil, snap},
		{"flatten-content-parts", userParts, "0.0.40", nil, snap},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := NewRun(Events, negotiate.Version{}, negotiate.MustParse(c.target), nil)
			r.RunID = "r"
			cr := EventChain(r.To, []*Step{c.step}).Start(r, negotiate.Plan{}, func(_, _ []byte) {})
			for _, ev := range c.setup {
				cr.Push([]byte(ev))
			}
			e := []byte(c.ev)
			b.SetBytes(int64(len(e)))
			b.ReportAllocs()
			for b.Loop() {
				cr.Push(e)
				r.warnings = r.warnings[:0]
			}
		})
	}
}

// BenchmarkTranslateInput costs shaping one typical RunAgentInput for a
// producer of each version, from a 1.0 consumer.
func BenchmarkTranslateInput(b *testing.B) {
	in := []byte(`{"threadId":"th","runId":"run-1","protocolVersion":"1.0","parentRunId":"run-0","state":{"step":2},"messages":[` +
		`{"id":"u1","role":"user","content":[{"type":"text","text":"Look at this"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}}]},` +
		`{"id":"a1","role":"assistant","content":"Sure.","toolCalls":[{"id":"call-1","type":"function","function":{"name":"calc","arguments":"{\"x\":1}"}}]},` +
		`{"id":"t1","role":"tool","toolCallId":"call-1","content":"42"}],` +
		`"tools":[{"name":"calc","description":"adds","parameters":{"type":"object"}}],"context":[],"forwardedProps":{"k":"v"}}`)
	for _, v := range []string{"1.0", "0.0.59", "0.0.48", "0.0.44", "0.0.39"} {
		plan := negotiate.DecideInput(negotiate.Current, negotiate.MustParse(v))
		b.Run(v, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				TranslateInput(plan, in, nil)
			}
		})
	}
}
