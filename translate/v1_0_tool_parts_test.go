package translate

import "testing"

func TestToolPartsToText(t *testing.T) {
	out, warns := through(t, "0.0.59", []*Step{toolPartsToText},
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":"a\"","id":"p1"},{"type":"image","source":{"type":"url","value":"u"}},{"type":"text","text":"é\n"}]}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"plain"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"t","role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}]},{"id":"u","role":"user","content":[{"type":"text","text":"keep"}]}]}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":1}]}`,
	)
	expect(t, out,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"a\"é\n"}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"plain"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"t","role":"tool","toolCallId":"c","content":"x"},{"id":"u","role":"user","content":[{"type":"text","text":"keep"}]}]}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":1}]}`,
	)
	if got := shapes(warns); got != "TOOL_CALL_RESULT.content.image×I" {
		t.Errorf("warnings %s", got)
	}
	// Lossy for what is not text; text parts joined are silent.
	claims(t, toolPartsToText, true, warns, "TOOL_CALL_RESULT.content.image")
	out, warns = through(t, "0.0.59", []*Step{toolPartsToText},
		`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)
	expect(t, out, `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"ab"}`)
	if len(warns) != 0 {
		t.Errorf("text parts joined warned: %s", shapes(warns))
	}
	// 1.0 reads parts.
	ev := `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":[{"type":"text","text":"a"}]}`
	out, _ = through(t, "1.0", []*Step{toolPartsToText}, ev)
	expect(t, out, ev)
}
