package synth

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlansAreWellFormed checks every dialect at several lengths: events
// are valid JSON, blocks open and close in order, the run starts and ends,
// the size is close to what was asked and text deltas dominate.
func TestPlansAreWellFormed(t *testing.T) {
	for _, d := range []Dialect{Dialect10, DialectLegacy, DialectThinking} {
		for _, n := range []int{2, 3, 4, 5, 6, 10, 57, 300, 1000} {
			plan := NewPlan(d, n)
			ks := plan.Kinds
			if ks[0] != KRunStarted || ks[len(ks)-1] != KRunFinished {
				t.Errorf("%s/%d: does not start and end a run", d, n)
			}
			if len(ks) != n {
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
	for _, p := range []RunParams{{Dialect: DialectLegacy, Events: 100, Rate: 20}, {Dialect: Dialect10, Idle: true, Events: 2}, {Dialect: DialectThinking, Events: 7, Rate: 0.5},
		{Dialect: Dialect10, Events: 40006, Mix: Mix{TextOnly: true, SubagentEvery: 10}},
		{Dialect: Dialect10, Events: 1000, Mix: Mix{NoTools: true, NoSubagents: true, NoState: true}}} {
		got, err := ParseRunParams(p.Path())
		if err != nil || got != p {
			t.Errorf("ParseRunParams(%q) = %+v, %v; want %+v", p.Path(), got, err, p)
		}
	}
	for _, bad := range []string{"/run?events=x", "/run?subagent=-1", "/run?text=yes"} {
		if _, err := ParseRunParams(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A text-only run is one message of content deltas, each stamped; with
// SubagentEvery the message sits inside one subagent pair and every n-th
// delta carries that subagent's id, and nothing else does.
func TestTextOnlyPlan(t *testing.T) {
	for _, tc := range []struct{ events, every, content, tagged int }{
		{40004, 0, 40000, 0}, {40006, 10, 40000, 4000}, {9, 0, 5, 0}, {11, 10, 5, 0}, {25, 10, 19, 1}, {3, 0, 0, 0},
	} {
		plan := NewMixedPlan(Dialect10, tc.events, Mix{TextOnly: true, SubagentEvery: tc.every})
		if tc.content > 0 && len(plan.Kinds) != tc.events {
			t.Errorf("%+v: %d events", tc, len(plan.Kinds))
		}
		if plan.Stamped != tc.content {
			t.Errorf("%+v: %d stamped, want every content delta", tc, plan.Stamped)
		}
		w := RunWriter{D: Dialect10, RunID: "r", Thread: "t"}
		var types []string
		content, tagged, sub := 0, 0, ""
		for i, k := range plan.Kinds {
			var ev struct {
				SubagentRunID string `json:"subagentRunId"`
			}
			b := w.appendEvent(nil, k, int64(i))
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			typ := m["type"].(string)
			types = append(types, typ)
			switch {
			case typ == "SUBAGENT_STARTED":
				sub = ev.SubagentRunID
			case typ == "TEXT_MESSAGE_CONTENT":
				content++
				if _, _, ok := ParseStamp(b); !ok {
					t.Errorf("unstamped delta %s", b)
				}
				if ev.SubagentRunID != "" {
					tagged++
					if ev.SubagentRunID != sub || content%tc.every != 0 {
						t.Errorf("delta %d tagged %q (subagent %q): %s", content, ev.SubagentRunID, sub, b)
					}
				}
			case ev.SubagentRunID != "" && typ != "SUBAGENT_FINISHED":
				t.Errorf("%s tagged: %s", typ, b)
			}
		}
		if content != tc.content || tagged != tc.tagged {
			t.Errorf("%+v: %d deltas, %d tagged", tc, content, tagged)
		}
		want := []string{"RUN_STARTED"}
		if tc.content > 0 {
			if tc.every > 0 {
				want = append(want, "SUBAGENT_STARTED")
			}
			want = append(want, "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT")
		}
		if strings.Join(types[:len(want)], ",") != strings.Join(want, ",") {
			t.Errorf("%+v: starts %v", tc, types[:len(want)])
		}
		end := []string{"RUN_FINISHED"}
		if tc.content > 0 {
			end = []string{"TEXT_MESSAGE_END", "RUN_FINISHED"}
			if tc.every > 0 {
				end = []string{"TEXT_MESSAGE_END", "SUBAGENT_FINISHED", "RUN_FINISHED"}
			}
		}
		if got := types[len(types)-len(end):]; strings.Join(got, ",") != strings.Join(end, ",") {
			t.Errorf("%+v: ends %v", tc, got)
		}
	}
}

// A mix without subagents, tools or state has none of their events.
func TestMixLeavesOut(t *testing.T) {
	plan := NewMixedPlan(Dialect10, 3000, Mix{NoTools: true, NoSubagents: true, NoState: true})
	for _, k := range plan.Kinds {
		switch k {
		case KSubStart, KSubTextStart, KSubTextContent, KSubTextEnd, KSubFinish, KToolStart, KToolArgs, KToolEnd, KToolResult, KStateDelta, KStateSnapshot:
			t.Fatalf("kind %d in a mix without it", k)
		}
	}
	full := NewPlan(Dialect10, 3000)
	if len(full.Kinds) == len(plan.Kinds) && full.Stamped == plan.Stamped {
		t.Error("the full plan is the same")
	}
}

// events=N is N events, RUN_STARTED and RUN_FINISHED included, for every
// N, dialect and mix (it was N+1 for most: a block cut short was closed
// past N).
func TestPlansHaveTheEventsAskedFor(t *testing.T) {
	mixes := []Mix{{}, {NoState: true}, {NoTools: true, NoReasoning: true}, {NoState: true, NoTools: true, NoReasoning: true, NoSubagents: true}}
	for _, d := range []Dialect{Dialect10, DialectLegacy, DialectThinking} {
		for _, m := range mixes {
			for n := 2; n <= 700; n++ {
				if got := len(NewMixedPlan(d, n, m).Kinds); got != n {
					t.Errorf("%s %+v: events=%d gave %d", d, m, n, got)
				}
			}
		}
	}
}
