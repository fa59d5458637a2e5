package load

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/event"
)

// With JudgeAuto a slot judges a body when its share of the rate allows:
// events read a millisecond apart (an agent's pace) are all judged, events
// that come faster than the slot's share a burst and then one per share,
// and the run's order and terminal are checked whatever was sampled.
func TestJudgeAutoSamplesByRate(t *testing.T) {
	const period = int64(50_000) // one slot's share of JudgeAutoPerSec, in ns
	frame := func(ev string) []byte { return []byte("data: " + ev + "\n\n") }
	content := func(i int) string {
		return fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"%d"}`, i)
	}
	for _, tc := range []struct {
		name       string
		step       int64 // ns between reads; 0: all in one read
		wantJudged int64
	}{{"an agent's pace", 1_000_000, 104}, {"full speed", 0, judgeBurst + 1}} {
		st := &runState{r: &Runner{}, sh: &shard{total: newHists(), interval: newHist()}, sc: event.NewScanner(nil, 0),
			judge: NewRunJudge(), judgeEvery: JudgeAuto, judgePeriod: period}
		st.now = 1_000_000_000
		push := func(ev string) {
			if err := st.sc.Push(frame(ev), st.frame); err != nil {
				t.Fatal(err)
			}
			st.now += tc.step
		}
		push(`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`)
		push(`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`)
		for i := 0; i < 100; i++ {
			push(content(i))
		}
		push(`{"type":"TEXT_MESSAGE_END","messageId":"m"}`)
		push(`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`)
		if st.judged != tc.wantJudged || st.events != 104 {
			t.Errorf("%s: %d of %d bodies judged, want %d", tc.name, st.judged, st.events, tc.wantJudged)
		}
		if k, msg := st.judge.Verdict(); k != "" {
			t.Errorf("%s: %s %s", tc.name, k, msg)
		}
		push(content(100)) // after RUN_FINISHED
		if k, _ := st.judge.Verdict(); k != KindOrder {
			t.Errorf("%s: an event after RUN_FINISHED: %q", tc.name, k)
		}
	}
}

// A run's input is the template with its own ids spliced in, whatever the
// order of the members, and whether the input had them or not.
func TestIDTemplate(t *testing.T) {
	for _, in := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"x","threadId":"no"}]}`,
		`{"runId":"r", "messages":[], "threadId":"t"}`,
		`{"messages":[]}`,
	} {
		tpl := newIDTemplate([]byte(in))
		got := tpl.fill(nil, "load-ab-", 3, 12)
		if !gjson.ValidBytes(got) || gjson.GetBytes(got, "threadId").String() != "thread-load-ab-3-12" ||
			gjson.GetBytes(got, "runId").String() != "run-load-ab-3-12" || gjson.GetBytes(got, "messages").Raw != gjson.Get(in, "messages").Raw {
			t.Errorf("%s: %s", in, got)
		}
	}
}
