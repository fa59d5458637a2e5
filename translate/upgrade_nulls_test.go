package translate

import "testing"

func TestNullMeansAbsent(t *testing.T) {
	out, warns := through(t, "1.0", []*Step{nullMeansAbsent},
		`{"type":"TEXT_MESSAGE_END","messageId":"m","rawEvent":null}`,
		`{"type":"TOOL_CALL_START","parentMessageId":null,"toolCallId":"c","toolCallName":"f"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null,"outcome":null}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"v"},"metadata":null},{"type":"text","text":"null","metadata":null}]}]}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"forwardedProps":null,"tools":[{"name":"f","description":"d","parameters":null}],"resume":[{"interruptId":"i","status":"resolved","payload":null}]}}`,
		// Nulls that never meant absent are malformed: passed on.
		`{"type":"RUN_ERROR","message":"m","code":null}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","name":null,"metadata":null}`,
		`{"type":"CUSTOM","name":"n","value":null}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_END","messageId":"m"}`,
		`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"v"}},{"type":"text","text":"null","metadata":null}]}]}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"f","description":"d"}],"resume":[{"interruptId":"i","status":"resolved"}]}}`,
		`{"type":"RUN_ERROR","message":"m","code":null}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","name":null,"metadata":null}`,
		`{"type":"CUSTOM","name":"n","value":null}`,
	)
	if len(warns) != 0 {
		t.Errorf("lossless step warned: %v", warns)
	}
}
