package translate

import "testing"

// A null that the consumer's own release rejected is malformed, not a
// retired way of saying "absent": inputNulls must pass it on for the
// producer to report (a translation never repairs). Only nulls the
// consumer's release accepted (an any-typed member, or a member it did not
// declare and so stripped unread) meant absent and go.
func TestInputNullsOnlyWhatTheConsumerAccepted(t *testing.T) {
	in := `{"threadId":"t","runId":"r","state":null,"tools":null,"context":null,"resume":null,"messages":[` +
		`{"id":"a","role":"assistant","content":null,"name":null,"toolCalls":null,"metadata":null,"subagentRunId":null,"encryptedValue":null},` +
		`{"id":"tm","role":"tool","toolCallId":"c","content":"x","error":null}]}`
	cases := []struct{ from, want string }{
		// 0.0.45: tools, context (required), assistant content (rejected
		// by every release), name, toolCalls, error and encryptedValue
		// (declared) stay; state (any), resume (undeclared before 0.0.54),
		// metadata and subagentRunId (undeclared before 0.0.59) go.
		{"0.0.45", `{"threadId":"t","runId":"r","tools":null,"context":null,"messages":[` +
			`{"id":"a","role":"assistant","content":null,"name":null,"toolCalls":null,"encryptedValue":null},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"x","error":null}]}`},
		// 0.0.44: encryptedValue was not declared yet.
		{"0.0.44", `{"threadId":"t","runId":"r","tools":null,"context":null,"messages":[` +
			`{"id":"a","role":"assistant","content":null,"name":null,"toolCalls":null},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"x","error":null}]}`},
		// 0.0.59 declared resume, metadata and subagentRunId: their nulls
		// are malformed there.
		{"0.0.59", `{"threadId":"t","runId":"r","tools":null,"context":null,"resume":null,"messages":[` +
			`{"id":"a","role":"assistant","content":null,"name":null,"toolCalls":null,"metadata":null,"subagentRunId":null,"encryptedValue":null},` +
			`{"id":"tm","role":"tool","toolCallId":"c","content":"x","error":null}]}`},
	}
	for _, c := range cases {
		out, warned := oneStep(t, inputNulls, c.from, "1.0", in)
		if out != c.want {
			t.Errorf("from %s:\n got %s\nwant %s", c.from, out, c.want)
		}
		if warned != "" {
			t.Errorf("from %s: warned %s", c.from, warned)
		}
	}
}

func TestInputNullsToolsMembers(t *testing.T) {
	in := `{"tools":[{"name":"t","description":"d","parameters":null,"metadata":null}],"resume":[{"interruptId":"i","status":"resolved","payload":null,"metadata":null}]}`
	// parameters and payload are any-typed: their null meant absent in
	// every release. Tool.metadata was declared in 0.0.52, ResumeEntry
	// .metadata in 0.0.59.
	out, _ := oneStep(t, inputNulls, "0.0.51", "1.0", in)
	if want := `{"tools":[{"name":"t","description":"d"}],"resume":[{"interruptId":"i","status":"resolved"}]}`; out != want {
		t.Errorf("from 0.0.51:\n got %s\nwant %s", out, want)
	}
	out, _ = oneStep(t, inputNulls, "0.0.59", "1.0", in)
	if want := `{"tools":[{"name":"t","description":"d","metadata":null}],"resume":[{"interruptId":"i","status":"resolved","metadata":null}]}`; out != want {
		t.Errorf("from 0.0.59:\n got %s\nwant %s", out, want)
	}
}
