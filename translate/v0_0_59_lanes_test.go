package translate

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// lanesThrough runs events through the subagents step for 0.0.58 and returns
// the output and the shapes it recorded as translated.
func lanesThrough(t *testing.T, events ...string) (out []string, translated string) {
	t.Helper()
	var got []string
	r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.58"), observerFunc(func(_ *Step, shape string) {
		got = append(got, shape)
	}))
	out, _ = throughRun(t, r, []*Step{subagents}, events...)
	return out, strings.Join(got, ",")
}

// A 1.0 consumer attaches an id-less continuation to its tagged lane; once
// the tag is gone an old consumer would attach it to its one open stream.
// The continuation gets the id of the lane's open stream.
func TestSubagentLanesTextChunk(t *testing.T) {
	out, tr := lanesThrough(t,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"parent "}`,
		`{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"child ","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"more child","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"more parent"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":" and child","subagentRunId":"s"}`,
		`{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"!"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"?"}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"parent "}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"child "}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"more child","messageId":"c"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"more parent","messageId":"p"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":" and child","messageId":"c"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"!","messageId":"p"}`, // the child's lane closed; the old consumer's stream is c
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"?"}`,                 // one lane, the old consumer's: as it was
	)
	if strings.Count(tr, "TEXT_MESSAGE_CHUNK.messageId") != 4 {
		t.Errorf("translated %s", tr)
	}
}

func TestSubagentLanesToolAndReasoningChunks(t *testing.T) {
	out, _ := lanesThrough(t,
		`{"type":"TOOL_CALL_CHUNK","toolCallId":"a","toolCallName":"f","delta":"{"}`,
		`{"type":"TOOL_CALL_CHUNK","toolCallId":"b","toolCallName":"g","delta":"[","subagentRunId":"s"}`,
		`{"type":"TOOL_CALL_CHUNK","delta":"1]","subagentRunId":"s"}`,
		`{"type":"TOOL_CALL_CHUNK","delta":"}"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r1","delta":"x","subagentRunId":"s"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r2","delta":"y","subagentRunId":"t"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"z","subagentRunId":"s"}`,
	)
	expect(t, out,
		`{"type":"TOOL_CALL_CHUNK","toolCallId":"a","toolCallName":"f","delta":"{"}`,
		`{"type":"TOOL_CALL_CHUNK","toolCallId":"b","toolCallName":"g","delta":"["}`,
		`{"type":"TOOL_CALL_CHUNK","delta":"1]","toolCallId":"b"}`,
		`{"type":"TOOL_CALL_CHUNK","delta":"}","toolCallId":"a"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r1","delta":"x"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r2","delta":"y"}`,
		`{"type":"REASONING_MESSAGE_CHUNK","delta":"z","messageId":"r1"}`,
	)
}

// What an old consumer reads the same way is left as it was: one lane, a
// lane whose stream is unknown or closed, an explicit id.
func TestSubagentLanesUnchanged(t *testing.T) {
	out, tr := lanesThrough(t,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"b"}`,
		`{"type":"RAW","event":{}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"c"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"f","subagentRunId":"u"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"g"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"h","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"i"}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"b"}`,
		`{"type":"RAW","event":{}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"c"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e","messageId":"c"}`, // two lanes open: made explicit
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"f"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"g"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"h"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"i"}`,
	)
	if strings.Count(tr, "TEXT_MESSAGE_CHUNK.messageId") != 1 {
		t.Errorf("translated %s", tr)
	}
	// An explicit event in the child's lane closes only that lane.
	out, _ = lanesThrough(t,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d","subagentRunId":"s"}`,
		`{"type":"STEP_STARTED","stepName":"x","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"b"}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"p","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d"}`,
		`{"type":"STEP_STARTED","stepName":"x"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"b","messageId":"p"}`,
	)
}

// BenchmarkSubagentLanes costs the lane tracking toward 0.0.58: an explicit
// event with no chunk stream open (asked, not taken), chunks of the parent's
// one lane (taken, passed on), and a tagged continuation made explicit.
func BenchmarkSubagentLanes(b *testing.B) {
	cases := []struct {
		name  string
		setup []string
		ev    string
	}{
		{"explicit-no-stream", nil, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Hello there"}`},
		{"parent-chunk-continuation", []string{`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}`},
			`{"type":"TEXT_MESSAGE_CHUNK","delta":"Hello there"}`},
		{"parent-chunk-with-id", []string{`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}`},
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"Hello there"}`},
		{"tagged-continuation-two-lanes", []string{`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}`,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"b","subagentRunId":"s"}`},
			`{"type":"TEXT_MESSAGE_CHUNK","delta":"Hello there","subagentRunId":"s"}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.58"), nil)
			r.RunID = "r"
			cr := EventChain(r.To, []*Step{subagents}).Start(r, negotiate.Plan{}, func(_, _ []byte) {})
			for _, ev := range c.setup {
				cr.Push([]byte(ev))
			}
			e := []byte(c.ev)
			typ := rules.PeekType(e)
			b.SetBytes(int64(len(e)))
			b.ReportAllocs()
			for b.Loop() {
				if cr.Wanted(typ, e).Any() {
					cr.Push(e)
				}
			}
		})
	}
}

// The streaming path is told from the bytes; an id named again elsewhere in
// the chunk (metadata) does not hide a new stream.
func TestSubagentLanesIDInMetadata(t *testing.T) {
	out, _ := lanesThrough(t,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"x","delta":"b","metadata":{"messageId":"m"}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"c","metadata":{"messageId":"m"}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d","subagentRunId":"s"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e"}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"x","delta":"b","metadata":{"messageId":"m"}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"c","metadata":{"messageId":"m"}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"d"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"e","messageId":"x"}`,
	)
}
