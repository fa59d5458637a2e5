package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

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
}

func TestRunAfterError(t *testing.T) {
	st := &StreamState{}
	to := negotiate.MustParse("0.0.58")
	run := func(events ...string) ([]string, []Warning) {
		r := NewRun(Events, negotiate.Version{}, to, nil)
		r.Stream = st
		return throughRun(t, r, Registry(), events...)
	}
	out, _ := run(`{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`, `{"type":"RUN_ERROR","message":"boom"}`)
	expect(t, out, `{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`, `{"type":"RUN_ERROR","message":"boom"}`)
	out, warns := run(`{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r2"}`)
	if len(out) != 0 {
		t.Errorf("later run reached the consumer: %v", out)
	}
	if got := shapes(warns); got != "RUN_STARTED after RUN_ERROR×III" {
		t.Errorf("warnings %s", got)
	}
	// A refusal is an error too: the run after it goes.
	st2 := &StreamState{}
	r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.45"), nil)
	r.Stream = st2
	throughRun(t, r, Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r1","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"x"}]}}`)
	if !st2.Errored {
		t.Error("a refused run did not mark the stream errored")
	}
	// 0.0.59 reads later runs.
	st3 := &StreamState{Errored: true}
	r = NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.59"), nil)
	r.Stream = st3
	out, _ = throughRun(t, r, Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`)
	expect(t, out, `{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`)
}

func TestNullParentMessageID(t *testing.T) {
	ev := `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":null}`
	out, warns := through(t, "0.0.54", []*Step{nullParentMessageID}, ev, `{"type":"TOOL_CALL_CHUNK","parentMessageId":"p"}`)
	expect(t, out, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`, `{"type":"TOOL_CALL_CHUNK","parentMessageId":"p"}`)
	if len(warns) != 0 {
		t.Errorf("lossless step warned: %v", warns)
	}
	// From a producer known to predate 0.0.58 the null is malformed: passed on.
	r := NewRun(Events, negotiate.MustParse("0.0.54"), negotiate.MustParse("0.0.50"), nil)
	out, _ = throughRun(t, r, []*Step{nullParentMessageID}, ev)
	expect(t, out, ev)
}
