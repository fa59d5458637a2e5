package translate

import "testing"

func TestEmptyDeltaDropped(t *testing.T) {
	steps := []*Step{emptyDelta}
	in := []string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r","delta":""}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":" "}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"t","delta":""}`,
	}
	out, warns := through(t, "0.0.49", steps, in...)
	expect(t, out, in[1], in[4], in[5], in[6])
	if len(warns) != 0 {
		t.Errorf("lossless step warned: %s", shapes(warns))
	}
	// From 0.0.50 an empty delta is valid: the step is not in the chain.
	out, _ = through(t, "0.0.50", steps, in...)
	expect(t, out, in...)
}
