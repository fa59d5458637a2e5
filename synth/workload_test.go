package synth

import (
	"encoding/json"
	"testing"
)

// TestPlansAreWellFormed checks every dialect at several lengths: events
// are valid JSON, blocks open and close in order, the run starts and ends,
// the size is close to what was asked and text deltas dominate.
func TestPlansAreWellFormed(t *testing.T) {
	for _, d := range []Dialect{Dialect10, DialectLegacy, DialectThinking} {
		for _, n := range []int{2, 10, 57, 300, 1000} {
			plan := NewPlan(d, n)
			ks := plan.Kinds
			if ks[0] != KRunStarted || ks[len(ks)-1] != KRunFinished {
				t.Errorf("%s/%d: does not start and end a run", d, n)
			}
			if len(ks) < n-1 || len(ks) > n+8 {
				t.Errorf("%s/%d: %d events", d, n, len(ks))
			}
			w := RunWriter{D: d, RunID: "r", Thread: "t"}
			types := map[string]int{}
			var stamped int64
			for i, k := range ks {
				ev := w.appendEvent(nil, k, int64(i))
				var m map[string]any
				if err := json.Unmarshal(ev, &m); err != nil {
					t.Fatalf("%s/%d: event %d (%v) is not JSON: %v: %s", d, n, i, k, err, ev)
				}
				types[m["type"].(string)]++
				if _, _, ok := ParseStamp(ev); ok != k.Stamped() {
					t.Errorf("%s: kind %v stamped %v, want %v", d, k, ok, k.Stamped())
				}
				if k.Stamped() {
					stamped++
				}
				if pv, ok := m["protocolVersion"]; ok != (d == Dialect10 && k == KRunStarted) || (ok && pv != "1.0") {
					t.Errorf("%s: protocolVersion %v on %v", d, pv, k)
				}
			}
			if stamped != int64(plan.Stamped) || w.Seq() != stamped {
				t.Errorf("%s/%d: %d stamped, plan says %d", d, n, stamped, plan.Stamped)
			}
			if types["TEXT_MESSAGE_START"] != types["TEXT_MESSAGE_END"] || types["TOOL_CALL_START"] != types["TOOL_CALL_END"] ||
				types["THINKING_START"] != types["THINKING_END"] || types["REASONING_START"] != types["REASONING_END"] ||
				types["SUBAGENT_STARTED"] != types["SUBAGENT_FINISHED"] {
				t.Errorf("%s/%d: unbalanced blocks %v", d, n, types)
			}
			if n == 1000 {
				switch d {
				case Dialect10, DialectLegacy:
					if share := float64(types["TEXT_MESSAGE_CONTENT"]) / float64(len(ks)); share < 0.6 {
						t.Errorf("%s: TEXT_MESSAGE_CONTENT is %.0f%% of events, want most", d, share*100)
					}
				case DialectThinking:
					if types["THINKING_TEXT_MESSAGE_CONTENT"] < 990 {
						t.Errorf("thinking: %d translated deltas", types["THINKING_TEXT_MESSAGE_CONTENT"])
					}
				}
				if d == DialectLegacy && (types["THINKING_START"] == 0 || types["REASONING_START"] != 0) {
					t.Errorf("legacy: %v", types)
				}
				if d == Dialect10 && (types["SUBAGENT_STARTED"] == 0 || types["THINKING_START"] != 0) {
					t.Errorf("1.0: %v", types)
				}
			}
		}
	}
}

func TestRunParamsRoundTrip(t *testing.T) {
	for _, p := range []RunParams{{Dialect: DialectLegacy, Events: 100, Rate: 20}, {Dialect: Dialect10, Idle: true, Events: 2}, {Dialect: DialectThinking, Events: 7, Rate: 0.5}} {
		got, err := ParseRunParams(p.Path())
		if err != nil || got != p {
			t.Errorf("ParseRunParams(%q) = %+v, %v; want %+v", p.Path(), got, err, p)
		}
	}
	if _, err := ParseRunParams("/run?events=x"); err == nil {
		t.Error("bad events accepted")
	}
}
