package translate

import "testing"

func TestThinkingToReasoning(t *testing.T) {
	steps := []*Step{thinkingToReasoning}
	out, warns := through(t, "1.0", steps,
		`{"type":"THINKING_START","title":"plan","timestamp":1}`,
		`{"type":"THINKING_TEXT_MESSAGE_START"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"a\"b"}`,
		`{"type":"THINKING_TEXT_MESSAGE_END"}`,
		`{"type":"THINKING_END"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`,
	)
	expect(t, out,
		`{"type":"REASONING_START","messageId":"reasoning-r1-1","timestamp":1}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"reasoning-r1-2","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"reasoning-r1-2","delta":"a\"b"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"reasoning-r1-2"}`,
		`{"type":"REASONING_END","messageId":"reasoning-r1-1"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`,
	)
	if got := shapes(warns); got != "REASONING_*.messageId (derived)×II,THINKING_START.title×I" {
		t.Errorf("warnings %s", got)
	}
}

func TestThinkingKeepsProducerIDsAndMintsOrphans(t *testing.T) {
	out, warns := through(t, "0.0.45", []*Step{thinkingToReasoning},
		`{"type":"THINKING_TEXT_MESSAGE_START","messageId":"own","role":"assistant"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"d"}`,
		`{"type":"THINKING_TEXT_MESSAGE_END"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"orphan"}`,
		`{"type":"THINKING_END","title":""}`,
	)
	expect(t, out,
		`{"type":"REASONING_MESSAGE_START","messageId":"own","role":"reasoning"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"own","delta":"d"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"own"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"reasoning-r1-1","delta":"orphan"}`,
		`{"type":"REASONING_END","messageId":"reasoning-r1-2","title":""}`,
	)
	if got := shapes(warns); got != "REASONING_*.messageId (derived)×II,THINKING_TEXT_MESSAGE_CONTENT without opener×I,THINKING_END without opener×I" {
		t.Errorf("warnings %s", got)
	}
	// Not for consumers that predate REASONING_*.
	out, _ = through(t, "0.0.41", Registry(), `{"type":"THINKING_START"}`)
	expect(t, out, `{"type":"THINKING_START"}`)
}
