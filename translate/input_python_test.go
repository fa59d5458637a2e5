package translate

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func pyRelease(t *testing.T, s string) negotiate.PyRelease {
	t.Helper()
	r, _, err := negotiate.ParsePyRelease("py" + s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// translatePy shapes in, from a consumer of version consumer, for a
// producer on Python release py.
func translatePy(t *testing.T, py, consumer, in string) (string, []Warning) {
	t.Helper()
	plan := negotiate.DecidePythonInput(negotiate.MustParse(consumer), pyRelease(t, py))
	out, run := TranslateInput(plan, []byte(in), nil)
	return string(out), append([]Warning(nil), run.Warnings()...)
}

func TestInputPython(t *testing.T) {
	for _, c := range []struct {
		py, consumer, in, want, lost string
	}{
		// extra="forbid": unknown members go, each named; forwardedProps
		// stays as it came, unknown members inside it included; the
		// members 0.1.x requires are added empty.
		{"0.1.9", "1.0",
			`{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[{"id":"a","role":"assistant","content":"x","metadata":{"k":1}},{"id":"t1","role":"tool","toolCallId":"c","content":"r","error":"e"}],"forwardedProps":{"x":{"unknown":1},"y":null},"extra":1}`,
			`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x"},{"id":"t1","role":"tool","toolCallId":"c","content":"r","error":"e"}],"forwardedProps":{"x":{"unknown":1},"y":null},"tools":[],"context":[],"state":{}}`,
			"Message(assistant).metadata,RunAgentInput.extra"},
		// ToolMessage.error arrived in 0.1.9.
		{"0.1.8", "1.0",
			`{"threadId":"t","runId":"r","state":null,"messages":[{"id":"t1","role":"tool","toolCallId":"c","content":"r","error":"e"}],"tools":[],"context":[],"forwardedProps":{}}`,
			`{"threadId":"t","runId":"r","state":null,"messages":[{"id":"t1","role":"tool","toolCallId":"c","content":"r"}],"tools":[],"context":[],"forwardedProps":{}}`,
			"Message(tool).error"},
		// extra="allow": unknown members stay, an unknown role goes; an
		// absent forwardedProps becomes null, an absent Tool.parameters
		// (required before 0.1.14) null.
		{"0.1.10", "1.0",
			`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x","metadata":{"k":1}},{"id":"n","role":"narrator","content":"x"}],"tools":[{"name":"f","description":"d"}]}`,
			`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x","metadata":{"k":1}}],"tools":[{"name":"f","description":"d","parameters":null}],"context":[],"state":{},"forwardedProps":null}`,
			"Message(narrator)"},
		{"0.1.14", "1.0",
			`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"f","description":"d"}],"forwardedProps":{}}`,
			`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"f","description":"d"}],"forwardedProps":{},"context":[],"state":{}}`,
			""},
		// The same TypeScript release on both sides, still shaped: 0.0.54
		// consumers may leave state out, 0.1.19 requires it.
		{"0.1.19", "0.0.54",
			`{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"forwardedProps":{}}`,
			`{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"forwardedProps":{},"state":{}}`,
			""},
		// Nothing to do: byte for byte.
		{"0.1.19", "0.0.54",
			`{"threadId":"t","runId":"r","state":{"a":1},"messages":[],"tools":[],"context":[],"forwardedProps":null}`,
			`{"threadId":"t","runId":"r","state":{"a":1},"messages":[],"tools":[],"context":[],"forwardedProps":null}`,
			""},
		// A malformed value is not repaired: the producer reports it.
		{"0.1.19", "0.0.54",
			`{"threadId":"t","runId":"r","state":{},"messages":[{"id":"u","role":"user","content":7}],"tools":[],"context":[],"forwardedProps":{}}`,
			`{"threadId":"t","runId":"r","state":{},"messages":[{"id":"u","role":"user","content":7}],"tools":[],"context":[],"forwardedProps":{}}`,
			""},
	} {
		out, ws := translatePy(t, c.py, c.consumer, c.in)
		if out != c.want {
			t.Errorf("%s from %s:\n got %s\nwant %s", c.py, c.consumer, out, c.want)
		}
		var lost []string
		for _, w := range ws {
			if w.Step == inputPython.Name {
				lost = append(lost, w.Shape)
				if !strings.Contains(w.Why, "ag-ui-protocol@"+c.py) || w.Upgrade == "" {
					t.Errorf("%s: warning %+v does not name the release or the upgrade", c.py, w)
				}
			}
		}
		if strings.Join(lost, ",") != c.lost {
			t.Errorf("%s: lost %v, want %s", c.py, lost, c.lost)
		}
	}
}

// What a consumer of any version sends, shaped for any Python release, is
// what that release accepts, unless the consumer sent a malformed value;
// and forwardedProps leaves as it came.
func TestInputPythonAccepted(t *testing.T) {
	inputs := []struct{ consumer, in string }{
		{"1.0", `{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"url","value":"http://x/i.png","mimeType":"image/png"}}]},{"id":"z","role":"reasoning","content":"hm"},{"id":"a","role":"assistant","content":"x","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"metadata":{}}]},{"id":"t1","role":"tool","toolCallId":"c","content":[{"type":"text","text":"ok"}]}],"tools":[{"name":"f","description":"d","metadata":{}}],"resume":[{"interruptId":"i","status":"resolved","metadata":{}}],"forwardedProps":{"deep":{"x":[1,{"y":null}]}}}`},
		{"1.0", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"document","source":{"type":"file","value":"f1"}},{"type":"hologram"}]}]}`},
		{"0.0.59", `{"threadId":"t","runId":"r","state":null,"messages":[{"id":"a","role":"assistant","content":"x","subagentRunId":"s","metadata":{"k":1}},{"id":"v","role":"activity","activityType":"a","content":{}}],"tools":[],"context":[],"forwardedProps":{}}`},
		{"0.0.45", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"AAAA"}]}],"tools":[{"name":"f","description":"d","parameters":{}}],"context":[{"description":"c","value":"v"}]}`},
	}
	for _, p := range negotiate.PyProfiles {
		for _, c := range inputs {
			plan := negotiate.DecidePythonInput(negotiate.MustParse(c.consumer), p.Release)
			out, _ := TranslateInput(plan, []byte(c.in), nil)
			j, _ := rules.JudgePythonInput(p.Release, out)
			for _, f := range j.Findings {
				if f.Verdict == rules.Malformed || (f.Verdict == rules.Unrecognised && f.Fatal) {
					t.Errorf("%s from %s: %+v left in\n%s", p.Release, c.consumer, f, out)
				}
			}
			if got, want := Get(out, "forwardedProps").Raw, Get([]byte(c.in), "forwardedProps").Raw; want != "" && got != want {
				t.Errorf("%s: forwardedProps %s became %s", p.Release, want, got)
			}
		}
	}
}

// A loss of a versioned step toward a Python producer says which
// ag-ui-protocol release takes the shape.
func TestInputPythonNamesTheReleaseToUpgradeTo(t *testing.T) {
	_, ws := translatePy(t, "0.1.10", "1.0", `{"threadId":"t","runId":"r","messages":[{"id":"z","role":"reasoning","content":"hm"}],"forwardedProps":{}}`)
	if len(ws) != 1 || ws[0].Step != "drop-reasoning-input" || !strings.HasSuffix(ws[0].Upgrade, "; for this Python agent: ag-ui-protocol 0.1.11 or newer") {
		t.Errorf("warnings %+v", ws)
	}
}
