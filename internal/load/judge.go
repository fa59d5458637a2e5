package load

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// KindOrder is the kind of a run whose events a consumer's verifier
// rejects where they stand (rules.Stream): a TEXT_MESSAGE_CONTENT before
// its TEXT_MESSAGE_START, an event after RUN_FINISHED.
const KindOrder = "out of order"

// RunJudge is the verdict on one run's event stream that load and
// check --url share: every event's place by the sequence rules of a 1.0
// consumer, and the terminal event the stream must end with. It does not
// judge the events' bodies (rules.JudgeEvent does).
type RunJudge struct {
	seq      *rules.Stream
	events   int64
	terminal string // "RUN_FINISHED", or "RUN_ERROR <code>"
	message  string // the last RUN_ERROR's message
	order    string // the first sequence fault
	last     string // with Final: the type of the stream's last event
	final    bool   // the terminal was judged by Final
}

// NewRunJudge starts judging a run.
func NewRunJudge() *RunJudge { return &RunJudge{seq: rules.NewStream(negotiate.Current)} }

// Reset starts judging another run, keeping what j allocated.
func (j *RunJudge) Reset() {
	j.seq.Reset()
	j.events, j.terminal, j.message, j.order, j.last, j.final = 0, "", "", "", "", false
}

var (
	typeRunFinished = []byte("RUN_FINISHED")
	typeRunError    = []byte("RUN_ERROR")
)

// Next judges the next event and returns its type (rules.PeekType(ev))
// and its sequence faults. ev is borrowed until the next call, the type
// with it. The bulk of a stream, the deltas of the message or tool call in
// progress, is judged without reading the event twice
// (rules.Stream.NextFlat).
func (j *RunJudge) Next(ev []byte) (typ []byte, faults []rules.StreamFault) {
	j.events++
	if typ = j.seq.NextFlat(ev); typ != nil {
		return typ, nil
	}
	typ = rules.PeekType(ev)
	j.terminalOf(ev, typ)
	faults = j.seq.NextOfType(ev, typ)
	if len(faults) > 0 && j.order == "" {
		j.order = fmt.Sprintf("#%d %s: %s: %s", faults[0].Index, typ, faults[0].Rule, faults[0].Detail)
	}
	return typ, faults
}

func (j *RunJudge) terminalOf(ev, typ []byte) {
	switch {
	case bytes.Equal(typ, typeRunFinished):
		j.terminal, j.message = "RUN_FINISHED", ""
	case bytes.Equal(typ, typeRunError):
		code := gjson.GetBytes(ev, "code").String()
		if code == "" {
			code = "-"
		}
		j.terminal, j.message = "RUN_ERROR "+code, gjson.GetBytes(ev, "message").String()
	}
}

// Final judges a run whose order is not checked (Next was not called) by
// the last of its n events, last (nil: none): the terminal event it must
// be.
func (j *RunJudge) Final(last []byte, n int64) {
	j.events, j.final = n, true
	if last != nil {
		typ := rules.PeekType(last)
		j.last = string(typ)
		if typ == nil {
			j.last = "event without a type"
		}
		j.terminalOf(last, typ)
	}
}

// Terminal is the last terminal event seen: "RUN_FINISHED", "RUN_ERROR
// <code>" (code "-" when none), or "".
func (j *RunJudge) Terminal() string { return j.terminal }

// Verdict is the run's failure once its stream has ended well: its kind
// and what happened, or two empty strings. A stream out of order is
// KindOrder; one without a terminal event KindCut; one that ends with
// RUN_ERROR is of kind "RUN_ERROR <code>", and what happened is that and
// the RUN_ERROR's message.
func (j *RunJudge) Verdict() (kind, msg string) {
	switch {
	case j.order != "":
		return KindOrder, j.order
	case j.terminal == "" && j.final && j.events > 0:
		return KindCut, fmt.Sprintf("the stream ended after %s, the last a %s, not RUN_FINISHED or RUN_ERROR (its order was not checked)", eventCount(j.events), j.last)
	case j.terminal == "":
		return KindCut, NoTerminal(j.events)
	case j.terminal != "RUN_FINISHED":
		if j.message == "" {
			return j.terminal, j.terminal
		}
		return j.terminal, j.terminal + ": " + j.message
	}
	return "", ""
}

// NoTerminal says that a stream of n events ended without a terminal event.
func NoTerminal(n int64) string {
	return fmt.Sprintf("the stream ended after %s without RUN_FINISHED or RUN_ERROR", eventCount(n))
}

// eventCount is n events in words: "1 event", "2 events".
func eventCount(n int64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}
