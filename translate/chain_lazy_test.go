package translate

import (
	"slices"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// A run's step state is made for the steps its events have been asked
// about, and only for those: an open, quiet run holds no state for steps
// whose event types it has not carried.
func TestChainRunMakesStepStateAtTheFirstEventItConcerns(t *testing.T) {
	target := negotiate.MustParse("0.0.45")
	r := NewRun(Events, negotiate.Version{}, target, nil)
	r.Stream = &StreamState{}
	c := EventChain(target, Registry())
	var out [][]byte
	cr := c.Start(r, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, slices.Clone(ev)) })
	for i := range c.Steps {
		if cr.steps[i].state != nil {
			t.Fatalf("step %s has state before any event", c.Steps[i].Name)
		}
	}

	cr.Push([]byte(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`))
	made := func(typ string) (n int) {
		for i, s := range c.Steps {
			concerns := s.concernsType([]byte(typ))
			if cr.steps[i].state != nil {
				n++
			}
			if cr.steps[i].state != nil && !concerns && typ == "RUN_STARTED" {
				t.Errorf("step %s (types %v) has state after RUN_STARTED alone", s.Name, s.Types)
			}
		}
		return n
	}
	afterStart := made("RUN_STARTED")
	if afterStart == 0 || afterStart == len(c.Steps) {
		t.Fatalf("%d of %d steps made after RUN_STARTED: the test needs a chain where some steps concern it and some do not", afterStart, len(c.Steps))
	}

	// A tool call reaches the steps that concern it, made now.
	cr.Push([]byte(`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":null}`))
	for i, s := range c.Steps {
		if s.Types != nil && s.concernsType([]byte("TOOL_CALL_START")) && cr.steps[i].state == nil {
			t.Errorf("step %s has no state after an event of its type", s.Name)
		}
	}
	if n := made("TOOL_CALL_START"); n <= afterStart {
		t.Errorf("%d steps made after TOOL_CALL_START, %d before", n, afterStart)
	}
}

// Made lazily or all at the start, a chain run emits the same.
func TestChainRunLazyStateEmitsAsEager(t *testing.T) {
	events := []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"url","value":"http://x/i.png"}}]}]}}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant","name":"bot"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"m"}`,
		`{"type":"REASONING_START","messageId":"r1"}`,
		`{"type":"REASONING_MESSAGE_START","messageId":"r2","role":"assistant"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r2","delta":"why"}`,
		`{"type":"REASONING_MESSAGE_END","messageId":"r2"}`,
		`{"type":"REASONING_END","messageId":"r1"}`,
		`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":null}`,
		`{"type":"TOOL_CALL_END","toolCallId":"c"}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"x","toolCallId":"c","content":[{"type":"text","text":"ok"}]}`,
		`{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"plan","content":{}}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`,
	}
	for _, target := range []string{"0.0.30", "0.0.45", "0.0.52", "1.0"} {
		run := func(eager bool) []string {
			to := negotiate.MustParse(target)
			r := NewRun(Events, negotiate.Version{}, to, nil)
			r.Stream = &StreamState{}
			c := EventChain(to, Registry())
			var out []string
			cr := c.Start(r, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, string(ev)) })
			if eager {
				for i := range c.Steps {
					cr.make(i)
				}
			}
			for _, ev := range events {
				cr.Push([]byte(ev))
			}
			return out
		}
		lazy, eager := run(false), run(true)
		if !slices.Equal(lazy, eager) {
			t.Errorf("to %s, lazily made state emits\n%q\nmade at the start\n%q", target, lazy, eager)
		}
		if len(lazy) == 0 {
			t.Errorf("to %s: nothing emitted", target)
		}
	}
}

// concernsType reports whether s names typ in its Types (or concerns any type).
func (s *Step) concernsType(typ []byte) bool {
	if s.Types == nil {
		return true
	}
	for _, t := range s.Types {
		if string(typ) == t {
			return true
		}
	}
	return false
}
