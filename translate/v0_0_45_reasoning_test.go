package translate

import (
	"strings"
	"testing"
)

const (
	thStart    = `{"type":"THINKING_START"}`
	thEnd      = `{"type":"THINKING_END"}`
	thMsgStart = `{"type":"THINKING_TEXT_MESSAGE_START"}`
	thMsgEnd   = `{"type":"THINKING_TEXT_MESSAGE_END"}`
)

func thContent(delta string) string {
	return `{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"` + delta + `"}`
}

func TestReasoningToThinkingSpan(t *testing.T) {
	out, warns := through(t, "0.0.44", []*Step{reasoningToThinking},
		`{"type":"REASONING_START","messageId":"s","timestamp":1}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"m","delta":"a\u00e9"}`,
		`{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m","encryptedValue":"xx"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"m"}`,
		`{"type":"REASONING_END","messageId":"s"}`,
	)
	expect(t, out,
		`{"type":"THINKING_START","timestamp":1}`,
		thMsgStart,
		thContent(`a\u00e9`),
		thMsgEnd,
		thEnd)
	if got := shapes(warns); got != "REASONING_*.messageId×IIIII,REASONING_ENCRYPTED_VALUE×I" {
		t.Errorf("warnings %s", got)
	}
	// 0.0.45 reads REASONING_*: not in the chain.
	ev := `{"type":"REASONING_START","messageId":"s"}`
	out, _ = through(t, "0.0.45", []*Step{reasoningToThinking}, ev)
	expect(t, out, ev)
}

func TestReasoningMessageOutsideSpanIsWrapped(t *testing.T) {
	out, warns := through(t, "0.0.41", []*Step{reasoningToThinking},
		`{"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"m"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"t"}`,
	)
	expect(t, out, thStart, thMsgStart, thContent("a"), thMsgEnd, thEnd, `{"type":"TEXT_MESSAGE_START","messageId":"t"}`)
	if !strings.Contains(shapes(warns), "REASONING_MESSAGE(outside a span)×I") {
		t.Errorf("no warning for the synthesised step: %s", shapes(warns))
	}
	for _, w := range warns {
		if w.Shape == "REASONING_MESSAGE(outside a span)" && !strings.Contains(w.Why, "no content or id invented") {
			t.Errorf("warning does not say nothing was invented: %s", w.Why)
		}
	}

	// A span opening inside the synthesised step takes it over.
	out, _ = through(t, "0.0.41", []*Step{reasoningToThinking},
		`{"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}`,
		`{"type":"REASONING_START","messageId":"s"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"m"}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"n","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"n"}`,
		`{"type":"REASONING_END","messageId":"s"}`,
	)
	expect(t, out, thStart, thMsgStart, thMsgEnd, thMsgStart, thMsgEnd, thEnd)
}

func TestReasoningInterleavedMessageDropped(t *testing.T) {
	out, warns := through(t, "0.0.44", []*Step{reasoningToThinking},
		`{"type":"REASONING_START","messageId":"s"}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"a","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"b","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"b","delta":"B"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"a","delta":"A"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"b"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"a"}`,
		`{"type":"REASONING_START","messageId":"s2"}`,
		`{"type":"REASONING_END","messageId":"s2"}`,
		`{"type":"REASONING_END","messageId":"s"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"zz","delta":"?"}`,
		`{"type":"REASONING_END","messageId":"zz"}`,
	)
	// Order is kept; only b's events and the nested span's boundaries go.
	expect(t, out, thStart, thMsgStart, thContent("A"), thMsgEnd, thEnd)
	got := shapes(warns)
	for _, want := range []string{"REASONING_MESSAGE(interleaved)×I", "REASONING_START(overlapping span)×I",
		"REASONING_MESSAGE_CONTENT(no open message)×I", "REASONING_END(no open span)×I"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %s, missing %s", got, want)
		}
	}
}

func TestReasoningChunksExpanded(t *testing.T) {
	out, _ := through(t, "0.0.44", []*Step{reasoningToThinking},
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"c","delta":"x"}`,
		`{"type":"RAW","event":{}}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"y"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"c","delta":""}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"d","delta":"z"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"t"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"e"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"no id"}`,
	)
	expect(t, out,
		thStart, thMsgStart, thContent("x"),
		`{"type":"RAW","event":{}}`, // RAW closes nothing
		thContent("y"),
		thMsgEnd, thEnd, thStart, thMsgStart, thContent("z"), // a new id closes the stream
		thMsgEnd, thEnd, `{"type":"TEXT_MESSAGE_START","messageId":"t"}`,
		thStart, thMsgStart,
		thMsgEnd, thEnd, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		// A first chunk without an id is malformed: passed on, not repaired.
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"no id"}`)

	// A chunk stream opening while an explicit message is open is dropped
	// whole; the explicit message goes on.
	out, warns := through(t, "0.0.44", []*Step{reasoningToThinking},
		`{"type":"REASONING_MESSAGE_START","messageId":"a","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"c","delta":"x"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"y"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"a","delta":"A"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"a"}`,
	)
	expect(t, out, thStart, thMsgStart, thContent("A"), thMsgEnd, thEnd)
	if !strings.Contains(shapes(warns), "REASONING_MESSAGE(interleaved)×I") {
		t.Errorf("warnings %s", shapes(warns))
	}
}

func TestReasoningMessagesDropped(t *testing.T) {
	snap := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"r","role":"reasoning","content":"think"},{"id":"u","role":"user","content":"hi","encryptedValue":"e"}]}`
	rs := `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"messages":[{"id":"u","role":"user","content":"hi"},{"id":"r","role":"reasoning","content":"x"}]}}`
	out, warns := through(t, "0.0.41", []*Step{reasoningToThinking}, rs, snap)
	expect(t, out,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"messages":[{"id":"u","role":"user","content":"hi"}]}}`,
		// encryptedValue: stripped silently by the consumer, no step.
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"hi","encryptedValue":"e"}]}`)
	if got := shapes(warns); got != "RUN_STARTED.input.messages.reasoning×I,MESSAGES_SNAPSHOT.messages.reasoning×I" {
		t.Errorf("warnings %s", got)
	}
	// Consumers before 0.0.41 strip RUN_STARTED.input unread: left alone.
	out, _ = through(t, "0.0.40", []*Step{reasoningToThinking}, rs)
	expect(t, out, rs)
}

// A chunk whose delta is not a string is malformed: it reaches the consumer
// as the CONTENT it stands for, delta and all, for the consumer to report
// (a REASONING_MESSAGE_CONTENT with such a delta is passed on the same
// way). Dropping it silently would hide the defect.
func TestReasoningChunkMalformedDeltaNotDropped(t *testing.T) {
	out, _ := through(t, "0.0.44", []*Step{reasoningToThinking},
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"m","delta":"a"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":5}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"m"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
	)
	expect(t, out,
		`{"type":"THINKING_START"}`,
		`{"type":"THINKING_TEXT_MESSAGE_START"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"a"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":5}`,
		`{"type":"THINKING_TEXT_MESSAGE_END"}`,
		`{"type":"THINKING_END"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
	)
}
