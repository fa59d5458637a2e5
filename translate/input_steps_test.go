package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// oneStep runs a single input step from a 1.0 consumer (or from) to to.
func oneStep(t *testing.T, s *Step, from, to, in string) (string, string) {
	t.Helper()
	plan := negotiate.InputPlan{From: negotiate.MustParse(from), To: negotiate.MustParse(to), Translate: true}
	out, run := TranslateInputWith([]*Step{s}, plan, []byte(in), nil)
	return string(out), shapes(run.Warnings())
}

func TestInputStepsOneByOne(t *testing.T) {
	cases := []struct {
		name             string
		step             *Step
		from, to, in     string
		want, wantWarned string
	}{
		{"activity toward the oldest producer", inputActivity, "0.0.40", "0.0.39",
			`{"messages":[{"id":"a","role":"activity","activityType":"x","content":{}},{"id":"u","role":"user","content":"x"}]}`,
			`{"messages":[{"id":"u","role":"user","content":"x"}]}`, ""},
		{"activity toward 1.0", inputActivity, "0.0.40", "1.0",
			`{"messages":[{"id":"u","role":"user","content":"x"},{"id":"a","role":"activity","activityType":"x","content":{}}]}`,
			`{"messages":[{"id":"u","role":"user","content":"x"}]}`, ""},
		{"nulls, never forwardedProps", inputNulls, "0.0.45", "1.0",
			`{"parentRunId":null,"state":null,"messages":[{"id":"u","role":"user","content":[{"type":"image","id":null,"metadata":null,"source":{"type":"url","value":"v","mimeType":null}}],"name":null,"encryptedValue":null},{"id":"s","role":"system","content":null}],"tools":[{"name":"t","description":"d","parameters":null,"metadata":null}],"context":null,"resume":[{"interruptId":"i","status":"resolved","payload":null}],"forwardedProps":null}`,
			// parentRunId, name, encryptedValue (declared by 0.0.45) and
			// context (required) were malformed for the consumer itself.
			`{"parentRunId":null,"messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"v"}}],"name":null,"encryptedValue":null},{"id":"s","role":"system","content":null}],"tools":[{"name":"t","description":"d"}],"context":null,"resume":[{"interruptId":"i","status":"resolved"}],"forwardedProps":null}`, ""},
		{"tools and context required", inputToolsContextRequired, "1.0", "0.0.59",
			`{"threadId":"t","tools":null}`, `{"threadId":"t","tools":null,"context":[]}`, ""},
		{"tools and context into an empty input", inputToolsContextRequired, "1.0", "0.0.59",
			`{}`, `{"tools":[],"context":[]}`, ""},
		{"file source", inputFileSource, "1.0", "0.0.59",
			`{"messages":[{"id":"u","role":"user","content":[{"type":"document","source":{"type":"file","value":"f"}}]}]}`,
			`{"messages":[{"id":"u","role":"user","content":""}]}`, "RunAgentInput.messages.content.source.file×I"},
		{"tool parts, text only", inputToolParts, "1.0", "0.0.59",
			`{"messages":[{"id":"t","role":"tool","toolCallId":"c","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			`{"messages":[{"id":"t","role":"tool","toolCallId":"c","content":"ab"}]}`, ""},
		{"subagentRunId", inputSubagentRunID, "1.0", "0.0.58",
			`{"messages":[{"id":"u","role":"user","content":"x","subagentRunId":"s"}],"subagentRunId":"kept"}`,
			`{"messages":[{"id":"u","role":"user","content":"x"}],"subagentRunId":"kept"}`, ""},
		{"resume with entries", inputResume, "1.0", "0.0.53",
			`{"resume":[{"interruptId":"i","status":"cancelled"}],"threadId":"t"}`, `{"threadId":"t"}`, "RunAgentInput.resume×I"},
		{"empty resume", inputResume, "1.0", "0.0.53", `{"threadId":"t","resume":[]}`, `{"threadId":"t"}`, ""},
		{"encryptedValue", inputEncryptedValue, "1.0", "0.0.44",
			`{"messages":[{"id":"a","role":"assistant","encryptedValue":"e","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":""},"encryptedValue":"e"}]}]}`,
			`{"messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}]}`, ""},
		{"reasoning messages", inputReasoning, "1.0", "0.0.44",
			`{"messages":[{"id":"r","role":"reasoning","content":"x"},{"id":"u","role":"user","content":"y"}]}`,
			`{"messages":[{"id":"u","role":"user","content":"y"}]}`, "RunAgentInput.messages.reasoning×I"},
		{"media to binary", inputMediaToBinary, "1.0", "0.0.48",
			`{"messages":[{"id":"u","role":"user","content":[{"type":"video","source":{"type":"url","value":"v","mimeType":"video/mp4"}}]}]}`,
			`{"messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"video/mp4","url":"v"}]}]}`, ""},
		{"media before parts is flattening's", inputMediaToBinary, "1.0", "0.0.39",
			`{"messages":[{"id":"u","role":"user","content":[{"type":"video","source":{"type":"url","value":"v","mimeType":"video/mp4"}}]}]}`,
			`{"messages":[{"id":"u","role":"user","content":[{"type":"video","source":{"type":"url","value":"v","mimeType":"video/mp4"}}]}]}`, ""},
		{"parentRunId", inputParentRunID, "1.0", "0.0.39", `{"parentRunId":"p","threadId":"t"}`, `{"threadId":"t"}`, ""},
		{"flatten and absent content", inputFlattenContent, "1.0", "0.0.39",
			`{"messages":[{"id":"a","role":"assistant"},{"id":"u","role":"user","content":[{"type":"text","text":"x"},{"type":"audio","source":{"type":"data","value":"d","mimeType":"audio/wav"}}]}]}`,
			`{"messages":[{"id":"a","role":"assistant","content":""},{"id":"u","role":"user","content":"x"}]}`, "RunAgentInput.messages.content.audio×I"},
		{"binary to media", inputBinaryToMedia, "0.0.45", "1.0",
			`{"messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"audio/wav","url":"u","filename":"f"},{"type":"binary","mimeType":"x/y","id":"i"}]}]}`,
			`{"messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"url","value":"u","mimeType":"audio/wav"},"metadata":{"filename":"f"}}]}]}`,
			"RunAgentInput.messages.content.binary(id only)×I"},
	}
	for _, c := range cases {
		if !c.step.Applies(negotiate.MustParse(c.to)) {
			t.Errorf("%s: %s does not apply toward %s", c.name, c.step.Name, c.to)
			continue
		}
		out, warns := oneStep(t, c.step, c.from, c.to, c.in)
		if out != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, out, c.want)
		}
		if warns != c.wantWarned {
			t.Errorf("%s: warnings %q, want %q", c.name, warns, c.wantWarned)
		}
		if (warns != "") && !c.step.Lossy {
			t.Errorf("%s: %s warns but is not marked lossy", c.name, c.step.Name)
		}
	}
}
