package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// What the Python encoder writes for a value of None becomes what 1.0
// reads; a value that is there, null included, is left alone; 0.0.x
// consumers, which read the absence, get the event as it came.
func TestAbsentMeansNull(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"CUSTOM","name":"n"}`, `{"type":"CUSTOM","name":"n","value":null}`},
		{`{"type":"RAW"}`, `{"type":"RAW","event":null}`},
		{`{"type":"STATE_SNAPSHOT","timestamp":1}`, `{"type":"STATE_SNAPSHOT","timestamp":1,"snapshot":null}`},
		{`{"type":"CUSTOM","name":"n","value":null}`, `{"type":"CUSTOM","name":"n","value":null}`},
		{`{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`, `{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`},
	} {
		got, ws := through(t, "1.0", []*Step{absentMeansNull}, c.in)
		out := ""
		if len(got) == 1 {
			out = got[0]
		}
		if out != c.want {
			t.Errorf("%s: got %s, want %s", c.in, out, c.want)
		}
		if len(ws) != 0 {
			t.Errorf("%s: warned %v; the step is silent", c.in, ws)
		}
		if j := rules.JudgeEvent(negotiate.Current, []byte(out)); j.Verdict != rules.Accepted {
			t.Errorf("%s: 1.0 finds %+v in the result", c.in, j.Findings)
		}
	}
	if absentMeansNull.Applies(negotiate.Version{Patch: 59}) {
		t.Error("the upgrade runs for a 0.0.59 consumer, which reads the absence")
	}
}
