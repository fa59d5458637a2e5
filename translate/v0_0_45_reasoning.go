package translate

import (
	"strings"

	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// reasoningToThinking downgrades REASONING_* to the THINKING_* events that
// consumers 0.0.37–0.0.44 read:
//
//	REASONING_START           → THINKING_START
//	REASONING_MESSAGE_START   → THINKING_TEXT_MESSAGE_START
//	REASONING_MESSAGE_CONTENT → THINKING_TEXT_MESSAGE_CONTENT
//	REASONING_MESSAGE_END     → THINKING_TEXT_MESSAGE_END
//	REASONING_END             → THINKING_END
//	REASONING_MESSAGE_CHUNK   → the THINKING message it stands for, expanded
//	                            in place (START on the first chunk, CONTENT per
//	                            non-empty delta, END where a 1.0 reader closes
//	                            the chunk stream, protocol-1.0 §2.14)
//	REASONING_ENCRYPTED_VALUE → dropped
//
// and drops reasoning-role messages from MESSAGES_SNAPSHOT and
// RUN_STARTED.input (these consumers fail the run on the role).
//
// Lossy, with a warning for each: the span and message ids (THINKING_* carry
// none, so the consumer cannot tie reasoning to an id); encrypted values;
// reasoning messages in snapshots and in the echoed input.
//
// Boundaries. The consumers' verifier allows one thinking step and one
// thinking message at a time, and a THINKING_TEXT_MESSAGE_START only inside a
// step. So:
//   - a reasoning message that opens outside any span is wrapped in a
//     THINKING_START / THINKING_END the relay synthesises (right before its
//     START, right after its END): boundaries reshaped, no content and no
//     identity invented, and the warning says so. A REASONING_START that
//     arrives while that synthesised step is open takes it over (its
//     THINKING_START was already sent) and its REASONING_END closes it;
//   - a second reasoning message (or chunk stream) that opens while one is
//     open cannot be served without reordering, which a translation must not
//     do: it is dropped whole (START, CONTENT, END) with a warning naming the
//     interleaving. The run goes on; the relay does not refuse it, because
//     reasoning is ancillary to the run and these consumers never make
//     messages of it (they only surface the events);
//   - a span that opens while another is open loses its START and END (its
//     messages stay, inside the open step), with a warning;
//   - a CONTENT or END for a message that is not open, or an END for a span
//     that is not open, names nothing the consumer holds: it is dropped with
//     a warning (0.0.45–0.0.59 readers ignore these too; mapping them would
//     attach content to the wrong message, or close the wrong step).
//
// A first REASONING_MESSAGE_CHUNK without a messageId is malformed (a 1.0
// reader fails the run on it): it passes on untouched for the consumer to
// report. Deltas that are empty are not expanded (these consumers reject
// them, see v0_0_50_empty_delta.go); a delta that is not a string is carried
// into the CONTENT as it is, like a CONTENT event's.
//
// No step needed: encryptedValue on messages and tool calls (0.0.45) is
// stripped silently by these consumers (nested unknown keys), and it is
// annotation-only for them.
//
// Reference consumer: 0.0.37–0.0.44 fail the whole run on any REASONING_*
// event and on a reasoning message (legacy-profiles §4(a), §4(d)); the
// 0.0.37+ verifier tracks one thinking step and one thinking message,
// without ids.
var reasoningToThinking = &Step{
	Name:        "reasoning-to-thinking",
	Description: "REASONING_* becomes THINKING_* (ids dropped, chunks expanded, one message at a time); encrypted values and reasoning messages are dropped",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 45},
	Lossy:       true,
	Types: []string{
		"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
		"REASONING_MESSAGE_CHUNK", "REASONING_END", "REASONING_ENCRYPTED_VALUE",
		"MESSAGES_SNAPSHOT", "RUN_STARTED",
		// Events that close an open chunk stream (protocol-1.0 §2.14): the
		// step must see them to emit the expanded END right before them.
		"RUN_FINISHED", "RUN_ERROR",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK", "TOOL_CALL_RESULT",
		"STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
	},
	NewEvent: func() EventStep { return &reasoningRun{} },
}

const reasoningUpgrade = "a consumer that reads REASONING_* (AG-UI 0.0.45 or newer)"

// reasoningRun is the state of one run: what is open downstream.
type reasoningRun struct {
	rewriter
	lit []byte // synthesised events, copied so no caller can alias a constant

	step      bool   // a THINKING step is open
	stepID    string // the span it stands for; "" while synthesised
	stepSynth bool   // synthesised around the open message: closes with it

	msg   bool   // a THINKING message is open
	msgID string // the reasoning message (or chunk stream) it stands for

	chunk       bool   // a REASONING_MESSAGE_CHUNK stream is open
	chunkID     string // its messageId
	chunkServed bool   // it is the open THINKING message (else it is dropped)

	droppedMsgs  map[string]bool // interleaved messages: their events go
	droppedSpans map[string]bool // overlapping spans: their END goes
}

var (
	litThinkingStart    = []byte(`{"type":"THINKING_START"}`)
	litThinkingEnd      = []byte(`{"type":"THINKING_END"}`)
	litThinkingMsgStart = []byte(`{"type":"THINKING_TEXT_MESSAGE_START"}`)
	litThinkingMsgEnd   = []byte(`{"type":"THINKING_TEXT_MESSAGE_END"}`)
	reasoningRole       = []byte(`"reasoning"`)
)

func (s *reasoningRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := r.EventType() // compared in place: no string is made per event
	if s.chunk && string(typ) != "REASONING_MESSAGE_CHUNK" && string(typ) != "REASONING_ENCRYPTED_VALUE" {
		s.closeChunk(emit)
	}
	switch string(typ) {
	case "REASONING_START":
		s.spanStart(r, ev, emit)
	case "REASONING_END":
		s.spanEnd(r, ev, emit)
	case "REASONING_MESSAGE_START":
		s.msgStart(r, ev, emit)
	case "REASONING_MESSAGE_CONTENT":
		s.msgContinue(r, ev, emit, `"THINKING_TEXT_MESSAGE_CONTENT"`, false)
	case "REASONING_MESSAGE_END":
		s.msgContinue(r, ev, emit, `"THINKING_TEXT_MESSAGE_END"`, true)
	case "REASONING_MESSAGE_CHUNK":
		s.chunkEvent(r, ev, emit)
	case "REASONING_ENCRYPTED_VALUE":
		r.Lost("REASONING_ENCRYPTED_VALUE", "consumers before 0.0.45 have no encrypted reasoning values", reasoningUpgrade)
	case "RUN_STARTED":
		// A new run: nothing of the previous one is open any more.
		*s = reasoningRun{rewriter: s.rewriter, lit: s.lit}
		if r.To.AtLeast(partsBoundary) { // older consumers strip input unread
			s.dropReasoningMessages(r, ev, "RUN_STARTED", emit)
			return
		}
		emit(ev)
	case "MESSAGES_SNAPSHOT":
		s.dropReasoningMessages(r, ev, "MESSAGES_SNAPSHOT", emit)
	default:
		emit(ev)
	}
}

func (s *reasoningRun) dropReasoningMessages(r *Run, ev []byte, typ string, emit func([]byte)) {
	if !bytes.Contains(ev, reasoningRole) {
		emit(ev)
		return
	}
	msgs, shape := messagesOf(ev, typ)
	dropRole(r, &s.ed, &s.items, msgs, "reasoning", shape+".reasoning",
		"consumers before 0.0.45 have no reasoning messages", reasoningUpgrade)
	s.emit(ev, emit)
}

func (s *reasoningRun) synth(lit []byte, emit func([]byte)) {
	s.lit = append(s.lit[:0], lit...)
	emit(s.lit)
}

// retype emits ev as the event type whose JSON string is to, without the
// members drop names.
func (s *reasoningRun) retype(r *Run, ev []byte, to string, emit func([]byte), drop ...string) {
	w := &s.rewriter
	root := Root(ev)
	w.items = Items(root, w.items[:0])
	lostID := false
	w.ed.DeleteItems(w.items, func(i int) bool {
		k := w.items[i].Key.Str
		for _, d := range drop {
			if k == d {
				lostID = lostID || k == "messageId"
				return true
			}
		}
		return false
	})
	if t := Sub(root, "type"); t.Exists() {
		w.ed.SetValueString(t, to)
	}
	if lostID {
		r.Lost("REASONING_*.messageId", "THINKING_* events carry no ids: the consumer cannot tie reasoning to its span or message id", reasoningUpgrade)
	} else {
		r.Translated("REASONING_MESSAGE_CHUNK") // only a continuation chunk has no id to lose
	}
	w.emit(ev, emit)
}

func idOf(ev []byte) (string, bool) {
	// The id aliases the borrowed event: whoever keeps it past the event
	// copies it.
	id := Get(ev, "messageId")
	return id.Str, id.Type == gjson.String
}

func (s *reasoningRun) spanStart(r *Run, ev []byte, emit func([]byte)) {
	id, _ := idOf(ev)
	switch {
	case s.step && s.stepSynth:
		// The open message's synthesised step becomes this span's: its
		// THINKING_START is already out, and this span's END will close it.
		s.stepSynth, s.stepID = false, strings.Clone(id)
		r.Lost("REASONING_*.messageId", "THINKING_* events carry no ids: the consumer cannot tie reasoning to its span or message id", reasoningUpgrade)
	case s.step:
		if s.droppedSpans == nil {
			s.droppedSpans = map[string]bool{}
		}
		s.droppedSpans[strings.Clone(id)] = true
		r.Lost("REASONING_START(overlapping span)",
			"consumers before 0.0.45 hold one thinking step at a time: the boundaries of a span that opens inside another are dropped (its messages stay in the open step)",
			reasoningUpgrade)
	default:
		s.step, s.stepID, s.stepSynth = true, strings.Clone(id), false
		s.retype(r, ev, `"THINKING_START"`, emit, "messageId")
	}
}

func (s *reasoningRun) spanEnd(r *Run, ev []byte, emit func([]byte)) {
	id, _ := idOf(ev)
	switch {
	case s.droppedSpans[id]:
		delete(s.droppedSpans, id)
		r.Translated("REASONING_END(overlapping span)")
	case s.step && !s.stepSynth && s.stepID == id:
		s.step, s.stepID = false, ""
		s.retype(r, ev, `"THINKING_END"`, emit, "messageId")
	default:
		r.Lost("REASONING_END(no open span)",
			"the span it ends is not open, so there is no thinking step to close",
			"a producer that closes only the reasoning spans it opened")
	}
}

func (s *reasoningRun) msgStart(r *Run, ev []byte, emit func([]byte)) {
	id, _ := idOf(ev)
	if s.msg && s.msgID != id {
		s.dropMessage(r, id)
		return
	}
	// A START for the open id is malformed (a reopen): it passes on mapped,
	// for the consumer's verifier to report.
	s.openStep(r, emit)
	s.msg, s.msgID = true, strings.Clone(id)
	s.retype(r, ev, `"THINKING_TEXT_MESSAGE_START"`, emit, "messageId", "role")
}

// openStep synthesises a THINKING_START when no step is open, for a
// message about to open.
func (s *reasoningRun) openStep(r *Run, emit func([]byte)) {
	if s.step {
		return
	}
	s.step, s.stepID, s.stepSynth = true, "", true
	r.Lost("REASONING_MESSAGE(outside a span)",
		"a thinking message needs an open thinking step: THINKING_START and THINKING_END were synthesised around it (boundaries reshaped; no content or id invented)",
		reasoningUpgrade)
	s.synth(litThinkingStart, emit)
}

// closeMessage ends the open message's synthesised step, if it has one.
func (s *reasoningRun) closeMessage(emit func([]byte)) {
	s.msg, s.msgID = false, ""
	if s.step && s.stepSynth {
		s.step, s.stepSynth = false, false
		s.synth(litThinkingEnd, emit)
	}
}

func (s *reasoningRun) dropMessage(r *Run, id string) {
	if s.droppedMsgs == nil {
		s.droppedMsgs = map[string]bool{}
	}
	s.droppedMsgs[strings.Clone(id)] = true
	r.Lost("REASONING_MESSAGE(interleaved)",
		"consumers before 0.0.45 hold one thinking message at a time: a reasoning message that opens while another is open cannot be delivered without reordering, so it is dropped whole",
		reasoningUpgrade)
}

func (s *reasoningRun) msgContinue(r *Run, ev []byte, emit func([]byte), to string, end bool) {
	id, _ := idOf(ev)
	switch {
	case s.droppedMsgs[id]:
		if end {
			delete(s.droppedMsgs, id)
		}
	case s.msg && s.msgID == id:
		s.retype(r, ev, to, emit, "messageId")
		if end {
			s.closeMessage(emit)
		}
	default:
		shape := "REASONING_MESSAGE_CONTENT(no open message)"
		if end {
			shape = "REASONING_MESSAGE_END(no open message)"
		}
		r.Lost(shape,
			"the reasoning message it continues is not open, so there is no thinking message to carry it",
			"a producer that opens reasoning messages before continuing them")
	}
}

func (s *reasoningRun) chunkEvent(r *Run, ev []byte, emit func([]byte)) {
	id, hasID := idOf(ev)
	if s.chunk && (!Get(ev, "messageId").Exists() || (hasID && id == s.chunkID)) {
		if s.chunkServed {
			s.chunkContent(r, ev, emit)
		}
		return
	}
	if s.chunk {
		s.closeChunk(emit)
	}
	if !hasID {
		emit(ev) // a first chunk without an id is malformed: not ours to repair
		return
	}
	s.chunk, s.chunkID = true, strings.Clone(id)
	if s.msg {
		s.chunkServed = false
		s.dropMessage(r, id)
		return
	}
	s.chunkServed = true
	s.openStep(r, emit)
	s.msg, s.msgID = true, strings.Clone(id)
	s.synth(litThinkingMsgStart, emit)
	s.chunkContent(r, ev, emit)
}

// chunkContent emits a served chunk as the CONTENT it expands to, when it
// carries a delta to expand. A delta that is not a string is malformed: it
// goes on in the CONTENT as it is, for the consumer to report (dropping it
// would hide the defect).
func (s *reasoningRun) chunkContent(r *Run, ev []byte, emit func([]byte)) {
	d := Get(ev, "delta")
	if !d.Exists() || d.Raw == `""` {
		r.Translated("REASONING_MESSAGE_CHUNK")
		return
	}
	s.retype(r, ev, `"THINKING_TEXT_MESSAGE_CONTENT"`, emit, "messageId")
}

// closeChunk ends the open chunk stream where a 1.0 reader would.
func (s *reasoningRun) closeChunk(emit func([]byte)) {
	served := s.chunkServed
	if !served {
		delete(s.droppedMsgs, s.chunkID)
	}
	s.chunk, s.chunkID, s.chunkServed = false, "", false
	if served {
		s.synth(litThinkingMsgEnd, emit)
		s.closeMessage(emit)
	}
}
