package rules

import (
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
)

// benchEvents are typical accepted events, one per common type.
var benchEvents = []struct{ name, ev string }{
	{"TEXT_MESSAGE_CONTENT", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_01HZX3","delta":"Hello, how can I help you today?","timestamp":1760000000000}`},
	{"TOOL_CALL_ARGS", `{"type":"TOOL_CALL_ARGS","toolCallId":"call_8fa2","delta":"{\"city\":\"Par"}`},
	{"TEXT_MESSAGE_START", `{"type":"TEXT_MESSAGE_START","messageId":"msg_01HZX3","role":"assistant"}`},
	{"TOOL_CALL_START", `{"type":"TOOL_CALL_START","toolCallId":"call_8fa2","toolCallName":"get_weather","parentMessageId":"msg_01HZX3"}`},
	{"RUN_STARTED", `{"type":"RUN_STARTED","threadId":"thread_1","runId":"run_1","protocolVersion":"1.0"}`},
	{"RUN_FINISHED", `{"type":"RUN_FINISHED","threadId":"thread_1","runId":"run_1","outcome":{"type":"success"},"usage":[{"provider":"openai","model":"gpt","inputTokens":12,"outputTokens":40}]}`},
	{"STATE_DELTA", `{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/count","value":2},{"op":"add","path":"/items/-","value":{"a":1}}]}`},
	{"MESSAGES_SNAPSHOT", `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":"hi"},{"id":"2","role":"assistant","content":"hello","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"3","role":"tool","toolCallId":"c","content":"ok"}]}`},
}

func BenchmarkJudgeEvent(b *testing.B) {
	for _, c := range benchEvents {
		ev := []byte(c.ev)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(ev)))
			for b.Loop() {
				if JudgeEvent(negotiate.Current, ev).Verdict != Accepted {
					b.Fatal("not accepted")
				}
			}
		})
	}
}

func BenchmarkJudgeEventLegacy(b *testing.B) {
	ev := []byte(benchEvents[0].ev)
	v := negotiate.MustParse("0.0.52")
	b.ReportAllocs()
	for b.Loop() {
		JudgeEvent(v, ev)
	}
}

// TestAcceptedEventsDoNotAllocate holds judging of accepted events to zero
// allocations: it runs on every event of a translated run.
func TestAcceptedEventsDoNotAllocate(t *testing.T) {
	for _, c := range benchEvents {
		ev := []byte(c.ev)
		j := JudgeEvent(negotiate.Current, ev)
		if j.Verdict != Accepted {
			t.Fatalf("%s: %+v", c.name, j)
		}
		if n := testing.AllocsPerRun(100, func() { JudgeEvent(negotiate.Current, ev) }); n != 0 {
			t.Errorf("%s: %v allocations per accepted event, want 0", c.name, n)
		}
	}
}

// BenchmarkJudgeInput judges a typical small RunAgentInput, as every run's
// request is judged before the producer is contacted.
func BenchmarkJudgeInput(b *testing.B) {
	in := []byte(`{"threadId":"thread-bench","runId":"r1-7","state":{},"messages":[{"id":"u1","role":"user","content":"Summarise the design notes."}],"tools":[],"context":[],"forwardedProps":{}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if JudgeInput(negotiate.Current, in).Verdict != Accepted {
			b.Fatal("not accepted")
		}
	}
}

// BenchmarkJudgeInputConversation judges a longer RunAgentInput, as a
// chat's later turns send.
func BenchmarkJudgeInputConversation(b *testing.B) {
	in := []byte(testkit.ConversationInput())
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if j := JudgeInput(negotiate.Current, in); j.Verdict != Accepted {
			b.Fatal("not accepted", j)
		}
	}
}

var peekSink []byte

// BenchmarkPeekType peeks at the type of an event as every encoder writes
// it (the relay does so for every event it relays), with a delta of text
// and of one token; at one that is not written so, and one that names its
// type twice.
func BenchmarkPeekType(b *testing.B) {
	for _, tc := range []struct{ name, ev string }{
		{"content", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_0123456789","delta":"Hello, this is a fairly typical delta of some text."}`},
		{"token", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_0123456789","delta":" the"}`}, // a model's delta: a token or two
		{"spaced", `{ "type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi" }`},
		{"late", `{"messageId":"msg_0123456789","delta":"Hello, this is a fairly typical delta of some text.","type":"TEXT_MESSAGE_CONTENT"}`},
		{"twice", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_0123456789","delta":"Hello, this is a fairly typical delta of some text.","type":"RUN_FINISHED"}`},
	} {
		ev := []byte(tc.ev)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				peekSink = PeekType(ev)
			}
		})
	}
}
