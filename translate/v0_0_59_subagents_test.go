package translate

import "testing"

func TestSubagents(t *testing.T) {
	out, warns := through(t, "0.0.58", []*Step{subagents},
		`{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","subagentRunId":"s"}`,
		`{"subagentRunId":"s","type":"TEXT_MESSAGE_END","messageId":"m"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"m","role":"assistant","subagentRunId":"s"}]}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"x","subagentRunId":"s"}]}}`,
		`{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`,
		`{"type":"CUSTOM","name":"n","value":{"subagentRunId":"kept: opaque"}}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_START","messageId":"m"}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"m"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"m","role":"assistant"}]}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"x"}]}}`,
		`{"type":"CUSTOM","name":"n","value":{"subagentRunId":"kept: opaque"}}`,
	)
	if got := shapes(warns); got != "SUBAGENT_STARTED×I,SUBAGENT_FINISHED×I" {
		t.Errorf("warnings %s", got)
	}
	// Lossy for the lifecycle events; the tags go silently.
	claims(t, subagents, true, warns, "SUBAGENT_STARTED", "SUBAGENT_FINISHED")
	out, warns = through(t, "0.0.58", []*Step{subagents},
		`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","subagentRunId":"s"}`)
	expect(t, out, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`)
	if len(warns) != 0 {
		t.Errorf("removing a tag warned: %s", shapes(warns))
	}
	// 0.0.59 reads subagents.
	ev := `{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`
	out, _ = through(t, "0.0.59", []*Step{subagents}, ev)
	expect(t, out, ev)
}

// A tag is removed wherever it sits among the event's members, whatever
// its value and however the event is laid out; a tag with an escape is
// read decoded; the name inside a value is no tag.
func TestSubagentsRemovesTopLevelTags(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a","subagentRunId":"s"}`:                                 `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","subagentRunId":"s","messageId":"m","delta":"a"}`:                                 `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{ "type" : "TEXT_MESSAGE_CONTENT" , "subagentRunId" : "s" , "delta" : "a" }`:                                     `{ "type" : "TEXT_MESSAGE_CONTENT" , "delta" : "a" }`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a","subagentRunId":7}`:                                   `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a","subagentRunId":"s\u0031"}`:                           `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a \"subagentRunId\":\"s\"","x":[{"subagentRunId":"s"}]}`: `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a \"subagentRunId\":\"s\"","x":[{"subagentRunId":"s"}]}`,
		`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/subagentRunId","value":"s"}],"subagentRunId":"s"}`:           `{"type":"STATE_DELTA","delta":[{"op":"add","path":"/subagentRunId","value":"s"}]}`,
	} {
		out, warns := through(t, "0.0.58", []*Step{subagents}, in)
		expect(t, out, want)
		if len(warns) != 0 {
			t.Errorf("%s: removing a tag warned: %s", in, shapes(warns))
		}
	}
}
