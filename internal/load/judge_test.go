package load

import (
	"fmt"
	"testing"
	"time"

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

// With JudgeAuto a slot checks a run's order when its share of
// OrderAutoPerSec allows: the first run, then none until the events of the
// checked ones are paid for, and after a pause (up to orderBurst of the
// share kept) every run again.
func TestOrderAutoSamplesRunsByRate(t *testing.T) {
	const period = int64(5_000) // ns an event: one slot's share of 200,000 a second
	now := int64(10 * time.Second)
	st := &runState{orderPeriod: period, orderNext: now, judge: NewRunJudge()} // no share kept from before
	var checked []bool
	for _, at := range []int64{0, time.Millisecond.Nanoseconds(), 4 * time.Millisecond.Nanoseconds(), 5 * time.Millisecond.Nanoseconds(), 2 * time.Second.Nanoseconds()} {
		st.orderFor(now + at)
		checked = append(checked, !st.lastOnly)
		st.events = 1000 // 5 ms of the share when checked
		st.judgeEnd()
	}
	if fmt.Sprint(checked) != "[true false false true true]" {
		t.Errorf("runs whose order was checked: %v", checked)
	}
	// Without the share (judge-every N, or 1), every run's is.
	st = &runState{judge: NewRunJudge()}
	for i := 0; i < 3; i++ {
		if st.orderFor(now); st.lastOnly {
			t.Fatal("a run's order not checked without JudgeAuto")
		}
		st.events = 1000
		st.judgeEnd()
	}
}

// A run whose order is not checked is judged by its last event: complete
// when it is RUN_FINISHED (events out of order before it pass), failed when
// it is RUN_ERROR or no terminal event, however many came before.
func TestRunsNotOrderCheckedAreJudgedByTheirLastEvent(t *testing.T) {
	const (
		start    = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
		content  = `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`
		finished = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
	)
	for _, tc := range []struct {
		name      string
		reads     [][]string // the events of each read
		kind, msg string
	}{
		{"complete", [][]string{{start, content}, {content, finished}}, "", ""},
		{"out of order, not checked", [][]string{{start, content, finished}}, "", ""},
		{"after RUN_FINISHED", [][]string{{start, finished}, {content}}, KindCut, "the stream ended after 3 events, the last a TEXT_MESSAGE_CONTENT, not RUN_FINISHED or RUN_ERROR (its order was not checked)"},
		{"RUN_ERROR", [][]string{{start}, {`{"type":"RUN_ERROR","message":"busy","code":"overloaded"}`}}, "RUN_ERROR overloaded", "RUN_ERROR overloaded: busy"},
		{"no event", nil, KindCut, NoTerminal(0)},
	} {
		st := &runState{r: &Runner{}, sh: &shard{total: newHists(), interval: newHist()}, sc: event.NewScanner(nil, 0),
			judge: NewRunJudge(), orderPeriod: 5_000, orderNext: int64(time.Hour)}
		st.orderFor(int64(time.Second)) // the share spent: the order is not checked
		for _, read := range tc.reads {
			var p []byte
			for _, ev := range read {
				p = append(p, "data: "+ev+"\n\n"...)
			}
			if err := st.sc.Push(p, st.frame); err != nil {
				t.Fatal(err)
			}
			st.keepLast()
		}
		st.judgeEnd()
		if kind, msg := st.judge.Verdict(); !st.lastOnly || kind != tc.kind || msg != tc.msg {
			t.Errorf("%s (order not checked: %v): %q %q, want %q %q", tc.name, st.lastOnly, kind, msg, tc.kind, tc.msg)
		}
	}
}
