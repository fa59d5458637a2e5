package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// benchEvents are, per step, an event the step rewrites.
var benchEvents = map[string]string{
	"thinking-to-reasoning":  `{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"Let me think about the question for a moment."}`,
	"binary-to-media":        `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"see"},{"type":"binary","mimeType":"image/png","data":"iVBORw0KGgo="}]}]}`,
	"null-means-absent":      `{"type":"TOOL_CALL_START","toolCallId":"call_1","toolCallName":"get_time","parentMessageId":null,"rawEvent":null}`,
	"tool-parts-to-text":     `{"type":"TOOL_CALL_RESULT","messageId":"t1","toolCallId":"call_1","content":[{"type":"text","text":"It is "},{"type":"text","text":"12:00"}]}`,
	"file-source-parts":      `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"x"},{"type":"document","source":{"type":"file","value":"f"}}]}]}`,
	"outcome-members":        `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":[]}}`,
	"cancelled-outcome":      `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`,
	"input-tools-context":    `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[]}}`,
	"unrecognised-material":  `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"critic","content":"x"},{"id":"b","role":"user","content":"y"}]}`,
	"subagents":              `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hello there","subagentRunId":"sa1"}`,
	"run-after-error":        `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hello there"}`,
	"null-parent-message-id": `{"type":"TOOL_CALL_START","toolCallId":"call_1","toolCallName":"get_time","parentMessageId":null}`,
	"interrupt-outcome":      `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approval"}]}}`,
}

func BenchmarkStep(b *testing.B) {
	for _, s := range Registry() {
		ev, ok := benchEvents[s.Name]
		if !ok {
			continue // another engineer's step: benchmarked in its own file
		}
		target := negotiate.Current
		if s.Kind == Downgrade {
			target = negotiate.Version{Patch: 45}
			if s.Since.Patch > 45 || s.Since.Major > 0 {
				target = negotiate.Version{Patch: s.Since.Patch - 1}
				if s.Since.Major > 0 {
					target = negotiate.Version{Patch: 59}
				}
			}
		}
		b.Run(s.Name, func(b *testing.B) { benchChain(b, target, []*Step{s}, ev) })
	}
}

// BenchmarkChain costs a typical streamed event through the whole registry
// for each target, against pass-through (the relay copies events no step
// concerns without calling the chain).
func BenchmarkChain(b *testing.B) {
	ev := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_01","delta":"Hello, how can I help you today?"}`
	for _, v := range []string{"1.0", "0.0.59", "0.0.54", "0.0.45", "0.0.41", "0.0.37"} {
		b.Run(v, func(b *testing.B) { benchChain(b, negotiate.MustParse(v), Registry(), ev) })
	}
	// A legacy producer's reasoning delta, which every 1.0 consumer needs
	// upgraded: the one event of the run with a THINKING_TEXT_MESSAGE_START
	// before it.
	b.Run("1.0/thinking-delta", func(b *testing.B) {
		benchChain(b, negotiate.Current, Registry(),
			`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"the relay needs an older shape; #12:1700000000000000012#"}`)
	})
	// What the relay asks of every event of a translated run.
	for _, c := range []struct{ target, ev string }{
		{"1.0", `{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"the relay needs an older shape; #12:1700000000000000012#"}`},
		{"0.0.45", ev},
	} {
		b.Run(c.target+"/concerns-event", func(b *testing.B) {
			r := NewRun(Events, negotiate.Version{}, negotiate.MustParse(c.target), nil)
			r.Stream = &StreamState{}
			cr := EventChain(r.To, Registry()).Start(r, negotiate.Plan{}, func(_, _ []byte) {})
			cr.Push([]byte(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`))
			e := []byte(c.ev)
			b.ReportAllocs()
			for b.Loop() {
				cr.Wanted(rules.PeekType(e), e).Any()
			}
		})
	}
	b.Run("1.0/concerns-only", func(b *testing.B) {
		c := EventChain(negotiate.Current, Registry())
		e := []byte(ev)
		b.ReportAllocs()
		for b.Loop() {
			_ = c.Concerns(rules.PeekType(e))
		}
	})
}

func benchChain(b *testing.B, target negotiate.Version, steps []*Step, ev string) {
	r := NewRun(Events, negotiate.Version{}, target, nil)
	r.RunID = "r"
	n := 0
	cr := EventChain(target, steps).Start(r, negotiate.Plan{}, func(_, _ []byte) { n++ })
	e := []byte(ev)
	b.SetBytes(int64(len(e)))
	b.ReportAllocs()
	for b.Loop() {
		cr.Push(e)
		r.warnings = r.warnings[:0]
	}
	if n == 0 && len(steps) == 1 && steps[0].Name != "unrecognised-material" && steps[0].Name != "run-after-error" {
		// Dropping steps emit nothing; every other step must emit.
		b.Fatalf("%s emitted nothing", steps[0].Name)
	}
}
