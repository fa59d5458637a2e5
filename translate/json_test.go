package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Events that no catch-all step wants are not pulled into a translated run's
// chain, so they leave as their bytes; those a step may change are.
func TestWantedAsksCatchAllSteps(t *testing.T) {
	c := EventChain(negotiate.MustParse("0.0.45"), Registry())
	run := NewRun(Events, negotiate.Current, negotiate.MustParse("0.0.45"), nil)
	run.Stream = &StreamState{}
	cr := c.Start(run, negotiate.Plan{}, func(_, _ []byte) {})
	cr.Push([]byte(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`))
	tests := []struct {
		ev   string
		want bool
	}{
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hello"}`, false},
		{`{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}`, false},
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi","subagentRunId":"s1"}`, true}, // attribution stripped
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","rawEvent":null}`, false},      // null-means-absent is a 1.0 upgrade
		{`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"n"}`, true},
		{`{"type":"USAGE_METADATA","tokens":3}`, true},                       // unknown to 0.0.45: removed
		{`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`, true},         // outcomes judged
		{`{"type":"RUN_ERROR","message":"m"}`, true},                         // marks the stream
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`, true}, // empty deltas dropped before 0.0.50
	}
	for _, tc := range tests {
		ev := []byte(tc.ev)
		if got := cr.Wanted(rules.PeekType(ev), ev).Any(); got != tc.want {
			t.Errorf("Wanted(%s) = %v, want %v", tc.ev, got, tc.want)
		}
	}
	v1 := EventChain(negotiate.Current, Registry())
	cr1 := v1.Start(NewRun(Events, negotiate.Version{}, negotiate.Current, nil), negotiate.Plan{}, func(_, _ []byte) {})
	for ev, want := range map[string]bool{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`:                 false,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","rawEvent":null}`: true,
		`{"type":"USAGE_METADATA","tokens":3}`:                                        false, // a 1.0 consumer gets it untouched
		`{"type":"THINKING_START"}`:                                                   true,
	} {
		if got := cr1.Wanted(rules.PeekType([]byte(ev)), []byte(ev)).Any(); got != want {
			t.Errorf("1.0: Wanted(%s) = %v, want %v", ev, got, want)
		}
	}
}
