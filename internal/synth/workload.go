package synth

import (
	"slices"
	"strconv"
)

// Dialect is what the synthetic producer speaks.
type Dialect uint8

const (
	// Dialect10 declares protocolVersion "1.0" on RUN_STARTED and uses the
	// 1.0 shapes, including ones a legacy consumer cannot read
	// (SUBAGENT_*, content parts in TOOL_CALL_RESULT, RUN_FINISHED.outcome
	// and usage).
	Dialect10 Dialect = iota
	// DialectLegacy omits protocolVersion and reasons with the retired
	// THINKING_* events, as producers from before 1.0 do.
	DialectLegacy
	// DialectThinking is a legacy producer whose every content event is a
	// THINKING_TEXT_MESSAGE_CONTENT: each one needs translation for a 1.0
	// consumer. It isolates the cost of a translated event.
	DialectThinking
)

// String names the dialect as it appears in URLs and reports.
func (d Dialect) String() string {
	switch d {
	case DialectLegacy:
		return "legacy"
	case DialectThinking:
		return "thinking"
	}
	return "1.0"
}

// ParseDialect is the inverse of String; unknown names give Dialect10.
func ParseDialect(s string) Dialect {
	switch s {
	case "legacy":
		return DialectLegacy
	case "thinking":
		return DialectThinking
	}
	return Dialect10
}

// Kind is one event of a run's plan.
type Kind uint8

// The kinds of events a run is made of.
const (
	KRunStarted Kind = iota
	KTextStart
	KTextContent
	KTextEnd
	KReasonStart
	KReasonMsgStart
	KReasonContent
	KReasonMsgEnd
	KReasonEnd
	KThinkStart
	KThinkMsgStart
	KThinkContent
	KThinkMsgEnd
	KThinkEnd
	KToolStart
	KToolArgs
	KToolEnd
	KToolResult
	KStateDelta
	KStateSnapshot
	KSubStart
	KSubTextStart
	KSubTextContent
	KSubTextEnd
	KSubFinish
	KRunFinished
	// KTaggedContent is a TEXT_MESSAGE_CONTENT of the run's own message
	// tagged with the current subagent's subagentRunId (TextOnly plans).
	KTaggedContent
)

// Stamped reports whether events of kind k carry a stamp (sequence number
// and send time). Stamps sit inside string values that every translation
// keeps (deltas, patch values, snapshot content), so that latency and
// completeness can be measured through a translating relay too. Events a
// translation may drop, rename into several or invent are not stamped.
func (k Kind) Stamped() bool {
	switch k {
	case KTextContent, KTaggedContent, KReasonContent, KThinkContent, KToolArgs, KStateDelta, KStateSnapshot:
		return true
	}
	return false
}

// Plan is the deterministic sequence of events of one run.
type Plan struct {
	Kinds []Kind
	// Stamped is how many events of Kinds carry a stamp.
	Stamped int
}

// Mix leaves blocks out of a run's plan; the zero Mix has every kind.
type Mix struct {
	NoTools     bool // no tool calls (TOOL_CALL_*)
	NoReasoning bool // no reasoning (REASONING_* or THINKING_*)
	NoSubagents bool // no subagents (SUBAGENT_* and the events they tag)
	NoState     bool // no STATE_DELTA or STATE_SNAPSHOT
	// TextOnly makes the run one text message and nothing else:
	// RUN_STARTED, TEXT_MESSAGE_START, the content deltas,
	// TEXT_MESSAGE_END, RUN_FINISHED (the second saturation workload of
	// bench/README).
	TextOnly bool
	// SubagentEvery, with TextOnly, puts the message inside a
	// SUBAGENT_STARTED/SUBAGENT_FINISHED pair and tags every n-th content
	// delta with the subagent's subagentRunId (a translation for a consumer
	// without subagents drops the pair and removes the tags; the deltas
	// keep their stamps). 0 is none.
	SubagentEvery int
}

// NewPlan returns the plan of a run of events events, RUN_STARTED and the
// terminal event included (at least those two), in dialect d. Most events are
// TEXT_MESSAGE_CONTENT deltas, with reasoning, tool calls, state deltas and
// snapshots mixed in, and for Dialect10 an occasional subagent.
func NewPlan(d Dialect, events int) Plan { return NewMixedPlan(d, events, Mix{}) }

// NewMixedPlan is NewPlan without the blocks m leaves out. A DialectThinking
// run is all reasoning whatever m says: that is what it measures.
func NewMixedPlan(d Dialect, events int, m Mix) Plan {
	ks := []Kind{KRunStarted}
	body := events - 2
	if m.TextOnly {
		return textOnlyPlan(body, m.SubagentEvery)
	}
	if d == DialectThinking {
		if body >= 4 {
			ks = append(ks, KThinkStart, KThinkMsgStart)
			for i := 0; i < body-4; i++ {
				ks = append(ks, KThinkContent)
			}
			ks = append(ks, KThinkMsgEnd, KThinkEnd)
		}
		for len(ks)-1 < body {
			ks = append(ks, KStateDelta) // too short for a thinking block
		}
		return finishPlan(append(ks, KRunFinished))
	}
	text := func(n int) {
		ks = append(ks, KTextStart)
		for i := 0; i < n; i++ {
			ks = append(ks, KTextContent)
		}
		ks = append(ks, KTextEnd)
	}
	reason := func(n int) {
		if d == DialectLegacy {
			ks = append(ks, KThinkStart, KThinkMsgStart)
			for i := 0; i < n; i++ {
				ks = append(ks, KThinkContent)
			}
			ks = append(ks, KThinkMsgEnd, KThinkEnd)
			return
		}
		ks = append(ks, KReasonStart, KReasonMsgStart)
		for i := 0; i < n; i++ {
			ks = append(ks, KReasonContent)
		}
		ks = append(ks, KReasonMsgEnd, KReasonEnd)
	}
	tool := func(n int) {
		ks = append(ks, KToolStart)
		for i := 0; i < n; i++ {
			ks = append(ks, KToolArgs)
		}
		ks = append(ks, KToolEnd, KToolResult)
	}
	sub := func(n int) {
		ks = append(ks, KSubStart, KSubTextStart)
		for i := 0; i < n; i++ {
			ks = append(ks, KSubTextContent)
		}
		ks = append(ks, KSubTextEnd, KSubFinish)
	}
	for cycle := 0; len(ks)-1 < body; cycle++ {
		// One cycle is about 130 events, 75% of them text deltas.
		text(30)
		if !m.NoReasoning {
			reason(10)
		}
		text(30)
		if !m.NoTools {
			tool(5)
		}
		if !m.NoState {
			ks = append(ks, KStateDelta)
		}
		text(30)
		if !m.NoState {
			ks = append(ks, KStateDelta)
			if cycle%2 == 1 {
				ks = append(ks, KStateSnapshot)
			}
		}
		if d == Dialect10 && cycle%4 == 3 && !m.NoSubagents {
			sub(5)
		}
	}
	return finishPlan(append(fitPlan(ks, body+1), KRunFinished))
}

// textOnlyPlan is a run of one text message of n-2 content deltas (n-4
// inside a subagent pair), every-th one tagged with the subagent when
// every > 0; a body too short for the blocks is the bare run.
func textOnlyPlan(n, every int) Plan {
	ks := []Kind{KRunStarted}
	content := n - 2
	if every > 0 {
		content -= 2
	}
	if content < 1 {
		return finishPlan(append(ks, KRunFinished))
	}
	if every > 0 {
		ks = append(ks, KSubStart)
	}
	ks = append(ks, KTextStart)
	for i := 1; i <= content; i++ {
		if every > 0 && i%every == 0 {
			ks = append(ks, KTaggedContent)
		} else {
			ks = append(ks, KTextContent)
		}
	}
	ks = append(ks, KTextEnd)
	if every > 0 {
		ks = append(ks, KSubFinish)
	}
	return finishPlan(append(ks, KRunFinished))
}

// fitPlan cuts ks to n events, the blocks it leaves open closed: the
// longest start of ks that makes at most n once closed and, when that is
// one short (the next event opens a block), one more content event where
// it has one, or else a STATE_DELTA, which stands alone.
func fitPlan(ks []Kind, n int) []Kind {
	m, depth := 0, 0
	for m < len(ks) {
		d := depth + nesting(ks[m])
		if m+1+d > n {
			break
		}
		m, depth = m+1, d
	}
	out := trimPlan(ks, m)
	if len(out) == n-1 {
		for i, k := range out {
			switch k {
			case KTextContent, KReasonContent, KThinkContent, KToolArgs, KSubTextContent:
				return slices.Insert(out, i+1, k)
			}
		}
		out = append(out, KStateDelta)
	}
	return out
}

// nesting is what an event does to the blocks open: 1 opens one, -1 closes
// one.
func nesting(k Kind) int {
	switch k {
	case KTextStart, KReasonStart, KReasonMsgStart, KThinkStart, KThinkMsgStart, KToolStart, KSubStart, KSubTextStart:
		return 1
	case KTextEnd, KReasonMsgEnd, KReasonEnd, KThinkMsgEnd, KThinkEnd, KToolEnd, KSubTextEnd, KSubFinish:
		return -1
	}
	return 0
}

// trimPlan cuts ks to n events, then closes whatever block was left open
// so that the run stays well formed.
func trimPlan(ks []Kind, n int) []Kind {
	ks = ks[:n]
	var open []Kind
	for _, k := range ks {
		switch nesting(k) {
		case 1:
			open = append(open, k)
		case -1:
			open = open[:len(open)-1]
		}
	}
	closer := map[Kind]Kind{KTextStart: KTextEnd, KReasonStart: KReasonEnd, KReasonMsgStart: KReasonMsgEnd,
		KThinkStart: KThinkEnd, KThinkMsgStart: KThinkMsgEnd, KToolStart: KToolEnd, KSubStart: KSubFinish, KSubTextStart: KSubTextEnd}
	for i := len(open) - 1; i >= 0; i-- {
		ks = append(ks, closer[open[i]])
	}
	return ks
}

func finishPlan(ks []Kind) Plan {
	p := Plan{Kinds: ks}
	for _, k := range ks {
		if k.Stamped() {
			p.Stamped++
		}
	}
	return p
}

// words are the filler of deltas: lower-case ASCII only, so that '#' (the
// stamp delimiter) and JSON escapes never occur in them.
var words = []string{
	"the relay", " forwards", " each event", " as it comes,", " byte for byte", " unless the", " consumer",
	" needs an", " older shape;", " then it", " splices", " only the", " fields", " that changed", " and moves on",
}

// RunWriter renders the events of one run.
type RunWriter struct {
	D      Dialect
	RunID  string
	Thread string
	// Delta is the length of each content delta's text before its stamp;
	// 0 is two words.
	Delta int
	block int // id counter for messages, tool calls, subagents
	subID int // block of the current subagent
	seq   int64
	word  int
}

// Seq is the number of stamped events rendered so far.
func (w *RunWriter) Seq() int64 { return w.seq }

// AppendStamp appends the stamp "#<seq>:<ns>#".
func AppendStamp(b []byte, seq, ns int64) []byte {
	b = append(b, '#')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, ns, 10)
	return append(b, '#')
}

func (w *RunWriter) id(b []byte, prefix string) []byte {
	b = append(b, prefix...)
	b = append(b, w.RunID...)
	b = append(b, '-')
	return strconv.AppendInt(b, int64(w.block), 10)
}

func (w *RunWriter) delta(b []byte, now int64) []byte {
	b = append(b, `"delta":"`...)
	if w.Delta > 0 {
		b = w.filler(b, w.Delta)
	} else {
		b = append(b, words[w.word%len(words)]...)
		b = append(b, words[(w.word+7)%len(words)]...)
		b = append(b, ' ')
	}
	w.word++
	b = AppendStamp(b, w.seq, now)
	w.seq++
	return append(b, '"')
}

// filler appends n bytes of words, starting at the run's current word.
func (w *RunWriter) filler(b []byte, n int) []byte {
	for i := w.word; n > 0; i++ {
		wd := words[i%len(words)]
		if len(wd) > n {
			wd = wd[:n]
		}
		b = append(b, wd...)
		n -= len(wd)
	}
	return b
}

// AppendFrame appends the SSE frame "data: <event>\n\n" of kind k, stamped
// with now (Unix nanoseconds) when k is stamped.
func (w *RunWriter) AppendFrame(b []byte, k Kind, now int64) []byte {
	b = append(b, "data: "...)
	b = w.appendEvent(b, k, now)
	return append(b, '\n', '\n')
}

func (w *RunWriter) appendEvent(b []byte, k Kind, now int64) []byte {
	switch k {
	case KRunStarted:
		b = append(b, `{"type":"RUN_STARTED","threadId":"`...)
		b = append(b, w.Thread...)
		b = append(b, `","runId":"`...)
		b = append(b, w.RunID...)
		if w.D == Dialect10 {
			return append(b, `","protocolVersion":"1.0"}`...)
		}
		return append(b, `"}`...)
	case KTextStart, KSubTextStart:
		w.block++
		b = append(b, `{"type":"TEXT_MESSAGE_START","messageId":"`...)
		b = w.id(b, "msg-")
		b = append(b, `","role":"assistant"`...)
		return w.sub(b, k == KSubTextStart)
	case KTextContent:
		b = append(b, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"`...)
		b = w.id(b, "msg-")
		b = append(b, `",`...)
		b = w.delta(b, now)
		return append(b, '}')
	case KTaggedContent:
		// Its tag is removed by a translation, its delta kept: stamped.
		b = append(b, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"`...)
		b = w.id(b, "msg-")
		b = append(b, `",`...)
		b = w.delta(b, now)
		return w.sub(b, true)
	case KSubTextContent:
		// Attributed to a subagent: a translation may strip or drop it, so
		// it carries no stamp.
		b = append(b, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"`...)
		b = w.id(b, "msg-")
		b = append(b, `","delta":"`...)
		if w.Delta > 0 {
			b = w.filler(b, w.Delta)
		} else {
			b = append(b, words[w.word%len(words)]...)
		}
		w.word++
		b = append(b, '"')
		return w.sub(b, true)
	case KTextEnd, KSubTextEnd:
		b = append(b, `{"type":"TEXT_MESSAGE_END","messageId":"`...)
		b = w.id(b, "msg-")
		b = append(b, '"')
		return w.sub(b, k == KSubTextEnd)
	case KReasonStart:
		w.block++
		b = append(b, `{"type":"REASONING_START","messageId":"`...)
		b = w.id(b, "rsn-")
		return append(b, `"}`...)
	case KReasonMsgStart:
		b = append(b, `{"type":"REASONING_MESSAGE_START","messageId":"`...)
		b = w.id(b, "rsm-")
		return append(b, `","role":"reasoning"}`...)
	case KReasonContent:
		b = append(b, `{"type":"REASONING_MESSAGE_CONTENT","messageId":"`...)
		b = w.id(b, "rsm-")
		b = append(b, `",`...)
		b = w.delta(b, now)
		return append(b, '}')
	case KReasonMsgEnd:
		b = append(b, `{"type":"REASONING_MESSAGE_END","messageId":"`...)
		b = w.id(b, "rsm-")
		return append(b, `"}`...)
	case KReasonEnd:
		b = append(b, `{"type":"REASONING_END","messageId":"`...)
		b = w.id(b, "rsn-")
		return append(b, `"}`...)
	case KThinkStart:
		w.block++
		return append(b, `{"type":"THINKING_START","title":"planning the answer"}`...)
	case KThinkMsgStart:
		return append(b, `{"type":"THINKING_TEXT_MESSAGE_START"}`...)
	case KThinkContent:
		b = append(b, `{"type":"THINKING_TEXT_MESSAGE_CONTENT",`...)
		b = w.delta(b, now)
		return append(b, '}')
	case KThinkMsgEnd:
		return append(b, `{"type":"THINKING_TEXT_MESSAGE_END"}`...)
	case KThinkEnd:
		return append(b, `{"type":"THINKING_END"}`...)
	case KToolStart:
		w.block++
		b = append(b, `{"type":"TOOL_CALL_START","toolCallId":"`...)
		b = w.id(b, "call-")
		return append(b, `","toolCallName":"search_documents"}`...)
	case KToolArgs:
		b = append(b, `{"type":"TOOL_CALL_ARGS","toolCallId":"`...)
		b = w.id(b, "call-")
		b = append(b, `",`...)
		b = w.delta(b, now)
		return append(b, '}')
	case KToolEnd:
		b = append(b, `{"type":"TOOL_CALL_END","toolCallId":"`...)
		b = w.id(b, "call-")
		return append(b, `"}`...)
	case KToolResult:
		b = append(b, `{"type":"TOOL_CALL_RESULT","messageId":"`...)
		b = w.id(b, "res-")
		b = append(b, `","toolCallId":"`...)
		b = w.id(b, "call-")
		if w.D == Dialect10 {
			return append(b, `","role":"tool","content":[{"type":"text","text":"3 documents matched: design.md, relay.md, bench.md"}]}`...)
		}
		return append(b, `","role":"tool","content":"3 documents matched: design.md, relay.md, bench.md"}`...)
	case KStateDelta:
		b = append(b, `{"type":"STATE_DELTA","delta":[{"op":"replace","path":"/status","value":"`...)
		b = AppendStamp(b, w.seq, now)
		w.seq++
		return append(b, `"},{"op":"add","path":"/steps/-","value":{"name":"search","done":true}}]}`...)
	case KStateSnapshot:
		b = append(b, `{"type":"STATE_SNAPSHOT","snapshot":{"status":"`...)
		b = AppendStamp(b, w.seq, now)
		w.seq++
		b = append(b, `","steps":[`...)
		for i := 0; i < 12; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":"step `...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `","done":true,"notes":"looked at the sources and kept two of them"}`...)
		}
		return append(b, `],"progress":0.5}}`...)
	case KSubStart:
		w.block++
		w.subID = w.block
		b = append(b, `{"type":"SUBAGENT_STARTED","subagentRunId":"`...)
		b = w.subRef(b)
		return append(b, `","name":"researcher"}`...)
	case KSubFinish:
		b = append(b, `{"type":"SUBAGENT_FINISHED","subagentRunId":"`...)
		b = w.subRef(b)
		return append(b, `","outcome":{"type":"success"}}`...)
	case KRunFinished:
		b = append(b, `{"type":"RUN_FINISHED","threadId":"`...)
		b = append(b, w.Thread...)
		b = append(b, `","runId":"`...)
		b = append(b, w.RunID...)
		if w.D == Dialect10 {
			return append(b, `","outcome":{"type":"success"},"usage":[{"provider":"bench","model":"synthetic","inputTokens":1200,"outputTokens":800,"totalTokens":2000}]}`...)
		}
		return append(b, `"}`...)
	}
	return append(b, `{"type":"CUSTOM","name":"unknown","value":null}`...)
}

// sub closes an event, attributing it to the current subagent when sub.
func (w *RunWriter) sub(b []byte, sub bool) []byte {
	if !sub {
		return append(b, '}')
	}
	b = append(b, `,"subagentRunId":"`...)
	b = w.subRef(b)
	return append(b, `"}`...)
}

func (w *RunWriter) subRef(b []byte) []byte {
	b = append(b, "sub-"...)
	b = append(b, w.RunID...)
	b = append(b, '-')
	return strconv.AppendInt(b, int64(w.subID), 10)
}
