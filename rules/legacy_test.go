package rules

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// legacyCase is one stimulus of legacy-profiles.md §3-§4 judged against one
// release: the verdict, whether that consumer fails the run, and where.
type legacyCase struct {
	version string
	input   bool
	doc     string
	verdict Verdict
	fatal   bool
	pointer string
}

var legacyCases = []legacyCase{
	// §4 (a): an unknown type fails every 0.0.x run, 1.0 drops it.
	{"0.0.42", false, `{"type":"FOO"}`, Unrecognised, true, ""},
	{"0.0.59", false, `{"type":"USAGE_METADATA"}`, Unrecognised, true, ""},
	{"1.0", false, `{"type":"USAGE_METADATA"}`, Unrecognised, false, ""},
	{"0.0.58", false, `{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`, Unrecognised, true, ""},
	{"0.0.59", false, `{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`, Accepted, false, ""},
	{"0.0.44", false, `{"type":"REASONING_START","messageId":"r"}`, Unrecognised, true, ""},
	{"0.0.45", false, `{"type":"REASONING_START","messageId":"r"}`, Accepted, false, ""},
	{"0.0.40", false, `{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"x","content":{}}`, Unrecognised, true, ""},
	{"0.0.41", false, `{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"x","content":{}}`, Accepted, false, ""},
	{"0.0.36", false, `{"type":"THINKING_START"}`, Unrecognised, true, ""},
	{"0.0.37", false, `{"type":"THINKING_START","title":"t"}`, Accepted, false, ""},
	{"0.0.59", false, `{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x"}`, Accepted, false, ""},
	{"1.0", false, `{"type":"THINKING_START","title":"t"}`, Retired, false, ""},
	// §4 (b): extra top-level keys are never fatal; inside a 0.0.54-0.0.59
	// outcome they are.
	{"0.0.42", false, `{"type":"STEP_STARTED","stepName":"s","extra":1}`, Unrecognised, false, "/extra"},
	{"0.0.43", false, `{"type":"STEP_STARTED","stepName":"s","extra":1}`, Unrecognised, false, "/extra"},
	{"0.0.54", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","x":1}}`, Unrecognised, true, "/outcome/x"},
	{"0.0.59", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":[]}}`, Unrecognised, true, "/outcome/pendingToolCallIds"},
	{"1.0", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","x":1}}`, Unrecognised, false, "/outcome/x"},
	// §4 (c): nulls.
	{"0.0.37", false, `{"type":"RUN_ERROR","message":"m","code":null}`, Malformed, true, "/code"},
	{"1.0", false, `{"type":"RUN_ERROR","message":"m","code":null}`, Malformed, true, "/code"},
	{"0.0.40", false, `{"type":"STEP_STARTED","stepName":"s","timestamp":null}`, Malformed, true, "/timestamp"},
	{"0.0.40", false, `{"type":"STEP_STARTED","stepName":"s","rawEvent":null}`, Accepted, false, ""},
	{"1.0", false, `{"type":"STEP_STARTED","stepName":"s","rawEvent":null}`, Retired, false, "/rawEvent"},
	{"0.0.47", false, `{"type":"TEXT_MESSAGE_START","messageId":"m","name":null}`, Unrecognised, false, "/name"},
	{"0.0.48", false, `{"type":"TEXT_MESSAGE_START","messageId":"m","name":null}`, Malformed, true, "/name"},
	{"0.0.53", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":null}`, Unrecognised, false, "/outcome"},
	{"0.0.54", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":null}`, Accepted, false, ""},
	{"1.0", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":null}`, Retired, false, "/outcome"},
	{"0.0.57", false, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}`, Malformed, true, "/parentMessageId"},
	{"0.0.58", false, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}`, Accepted, false, ""},
	{"0.0.58", false, `{"type":"STEP_STARTED","stepName":"s","metadata":null}`, Unrecognised, false, "/metadata"},
	{"0.0.59", false, `{"type":"STEP_STARTED","stepName":"s","metadata":null}`, Malformed, true, "/metadata"},
	// §4 (d), (e): unknown roles, part and source types.
	{"0.0.52", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"narrator","content":"x"}]}`, Unrecognised, true, "/messages/0"},
	{"0.0.44", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"reasoning","content":"x"}]}`, Unrecognised, true, "/messages/0"},
	{"1.0", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"narrator","content":"x"}]}`, Unrecognised, false, "/messages/0"},
	{"0.0.48", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}]}`, Unrecognised, true, "/messages/0/content/0"},
	{"0.0.49", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}]}`, Accepted, false, ""},
	{"0.0.59", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"file","value":"f"}}]}]}`, Unrecognised, true, "/messages/0/content/0"},
	{"1.0", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"file","value":"f"}}]}]}`, Accepted, false, ""},
	{"0.0.40", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"text","text":"x"}]}]}`, Malformed, true, "/messages/0/content"},
	{"0.0.52", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"aGk="}]}]}`, Accepted, false, ""},
	{"1.0", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"binary","mimeType":"image/png","url":"u"}]}]}`, Retired, false, "/messages/0/content/0"},
	{"1.0", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"binary","mimeType":"image/png","id":"f"}]}]}`, Unrecognised, false, "/messages/0/content/0"},
	{"0.0.59", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}]}]}`, Malformed, true, "/messages/0/content"},
	{"1.0", false, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}]}]}`, Accepted, false, ""},
	// Outcome members.
	{"0.0.59", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`, Unrecognised, true, "/outcome"},
	{"1.0", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`, Accepted, false, ""},
	{"1.0", false, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"paused"}}`, Unrecognised, false, "/outcome"},
	// Enums are leaves: fatal everywhere.
	{"0.0.37", false, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"narrator"}`, Malformed, true, "/role"},
	{"1.0", false, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"narrator"}`, Malformed, true, "/role"},
	{"0.0.36", false, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"user"}`, Malformed, true, "/role"},
	{"0.0.36", false, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, Malformed, true, "/role"},
	{"0.0.37", false, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, Accepted, false, ""},
	// Value strictness that changed.
	{"0.0.49", false, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`, Malformed, true, "/delta"},
	{"0.0.50", false, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`, Accepted, false, ""},
	{"0.0.59", false, `{"type":"STATE_SNAPSHOT"}`, Accepted, false, ""},
	// Absent in 0.0.x's z.any() and from the Python encoder's exclude_none:
	// a retired shape for 1.0 (upgraded to null), not malformed.
	{"1.0", false, `{"type":"STATE_SNAPSHOT"}`, Retired, false, "/snapshot"},
	{"0.0.59", false, `{"type":"STEP_STARTED","stepName":"s","timestamp":1.5}`, Accepted, false, ""},
	{"1.0", false, `{"type":"STEP_STARTED","stepName":"s","timestamp":1.5}`, Malformed, true, "/timestamp"},
	{"0.0.59", false, `{"type":"STATE_DELTA","delta":[{"op":"increment"}]}`, Accepted, false, ""},
	{"1.0", false, `{"type":"STATE_DELTA","delta":[{"op":"add","path":"a","value":1}]}`, Malformed, true, "/delta/0/path"},
	{"0.0.58", false, `{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":-1}]}`, Malformed, true, "/usage/0/inputTokens"},
	{"0.0.57", false, `{"type":"RUN_ERROR","message":"m","usage":[]}`, Unrecognised, false, "/usage"},
	// Readers disagree on a repeated type: malformed in every version.
	{"1.0", false, `{"type":"TEXT_MESSAGE_END","messageId":"m","type":"RUN_FINISHED"}`, Malformed, true, "/type"},
	{"0.0.45", false, `{"type":"FOO","type":"STEP_STARTED","stepName":"s"}`, Malformed, true, "/type"},
	{"1.0", false, `[1]`, Malformed, true, ""},
	{"1.0", false, `{"type":"STEP_STARTED",`, Malformed, true, ""},
	{"1.0", false, `{"type":""}`, Malformed, true, "/type"},
	// RunAgentInput (§3.4).
	{"0.0.59", true, `{"threadId":"t","runId":"r","messages":[]}`, Malformed, true, "/tools"},
	{"1.0", true, `{"threadId":"t","runId":"r","messages":[]}`, Accepted, false, ""},
	{"0.0.59", true, `{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"forwardedProps":null,"state":null}`, Accepted, false, ""},
	{"1.0", true, `{"threadId":"t","runId":"r","messages":[],"forwardedProps":null}`, Malformed, true, "/forwardedProps"},
	{"1.0", true, `{"threadId":"t","runId":"r","messages":[],"state":null}`, Accepted, false, ""},
	{"1.0", true, `{"thread_id":"t","run_id":"r","messages":[]}`, Malformed, true, "/threadId"},
	{"0.0.45", true, `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"reasoning","content":"x"}],"tools":[],"context":[]}`, Accepted, false, ""},
	{"1.0", true, `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"expired"}]}`, Malformed, true, "/resume/0/status"},
	// RUN_STARTED.input: the echo's nulls are retired, the input's are not.
	{"1.0", false, `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"forwardedProps":null,"tools":[{"name":"n","description":"d","parameters":null}]}}`, Retired, false, "/input/tools/0/parameters"},
	{"0.0.59", false, `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[]}}`, Malformed, true, "/input/tools"},
	{"0.0.40", false, `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{}}`, Unrecognised, false, "/input"},
}

func TestLegacyProfiles(t *testing.T) {
	for _, c := range legacyCases {
		v := negotiate.MustParse(c.version)
		var j Judgement
		if c.input {
			j = JudgeInput(v, []byte(c.doc))
		} else {
			j = JudgeEvent(v, []byte(c.doc))
		}
		if j.Verdict != c.verdict {
			t.Errorf("%s %s: verdict %s, want %s; findings %+v", c.version, c.doc, j.Verdict, c.verdict, j.Findings)
			continue
		}
		if c.verdict == Accepted {
			if j.Findings != nil {
				t.Errorf("%s %s: accepted with findings %+v", c.version, c.doc, j.Findings)
			}
			continue
		}
		found := false
		for _, f := range j.Findings {
			if f.Verdict == c.verdict && f.Pointer == c.pointer {
				found = true
				if f.Fatal != c.fatal {
					t.Errorf("%s %s: finding at %q fatal=%v, want %v", c.version, c.doc, c.pointer, f.Fatal, c.fatal)
				}
			}
		}
		if !found {
			t.Errorf("%s %s: no %s finding at %q; findings %+v", c.version, c.doc, c.verdict, c.pointer, j.Findings)
		}
	}
}

// TestKnownEventTypes checks the parseable counts of legacy-profiles §3.1.
func TestKnownEventTypes(t *testing.T) {
	for _, c := range []struct {
		version string
		n       int
	}{{"0.0.27", 16}, {"0.0.28", 18}, {"0.0.30", 22}, {"0.0.36", 22}, {"0.0.37", 24}, {"0.0.40", 24},
		{"0.0.41", 26}, {"0.0.44", 26}, {"0.0.45", 33}, {"0.0.58", 33}, {"0.0.59", 36}, {"1.0", 31}, {"2.3", 31}} {
		if got := len(EventTypes(negotiate.MustParse(c.version))); got != c.n {
			t.Errorf("%s: %d parseable event types, want %d", c.version, got, c.n)
		}
	}
	if !KnownEventType(negotiate.Current, []byte("SUBAGENT_ERROR")) || KnownEventType(negotiate.Current, []byte("THINKING_END")) {
		t.Error("1.0 reads SUBAGENT_ERROR and not THINKING_END")
	}
	if !KnownEventType(negotiate.MustParse("0.0.59"), []byte("THINKING_END")) {
		t.Error("0.0.59 reads THINKING_END")
	}
}
