package translate

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// chunkLanes is what the subagents downgrade needs to keep 1.0's chunk
// lanes apart once the subagentRunId tags that name them are gone.
//
// A 1.0 consumer expands chunks per lane (protocol-1.0 §2.14): an id-less
// continuation goes to the open stream of the lane its tag names (untagged:
// the parent's, else the only open one of its kind). A consumer older than
// 0.0.59 has one open chunk stream and attaches every id-less continuation to
// it, so a continuation that 1.0 attaches to another lane's stream would move
// content between messages. The step gives such a continuation the id of the
// stream 1.0 attaches it to: an id the producer sent, naming the message the
// content belongs to — reshaping, no new id and no new content.
//
// It tracks, per lane, the one open chunk stream (1.0 keeps one per lane) and
// what the old consumer's single stream is. Streams close as §2.14's table
// says. The tracking sees only chunks and, while a stream is open, the events
// that close one: a stream of explicit events costs a type comparison.
type chunkLanes struct {
	open_   []laneStream
	old     laneStream // the old consumer's open stream, when oldOpen
	oldOpen bool
}

type laneStream struct {
	lane string // subagentRunId; "" is the parent's lane
	kind chunkKind
	id   string // the id, decoded
	raw  string // the id as the producer wrote it (a JSON string)
	// needle is `"messageId":` (or `"toolCallId":`) and raw: how a chunk
	// naming the stream again usually reads.
	needle []byte
}

type chunkKind byte

const (
	textChunk chunkKind = iota + 1
	toolChunk
	reasoningChunk
)

func chunkKindOf(typ []byte) chunkKind {
	switch string(typ) {
	case "TEXT_MESSAGE_CHUNK":
		return textChunk
	case "TOOL_CALL_CHUNK":
		return toolChunk
	case "REASONING_MESSAGE_CHUNK":
		return reasoningChunk
	}
	return 0
}

func (k chunkKind) idKey() string {
	if k == toolChunk {
		return "toolCallId"
	}
	return "messageId"
}

var (
	quotedMessageID  = []byte(`"messageId"`)
	quotedToolCallID = []byte(`"toolCallId"`)
)

func (k chunkKind) quotedKey() []byte {
	if k == toolChunk {
		return quotedToolCallID
	}
	return quotedMessageID
}

func (k chunkKind) shape() string {
	switch k {
	case toolChunk:
		return "TOOL_CALL_CHUNK.toolCallId"
	case reasoningChunk:
		return "REASONING_MESSAGE_CHUNK.messageId"
	}
	return "TEXT_MESSAGE_CHUNK.messageId"
}

// closing says what an event closes: every lane (run-level events), its own
// lane (explicit message, tool, state, custom and step events), or nothing
// (RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE, SUBAGENT_STARTED, unknown).
func closing(typ []byte) (all, own bool) {
	t := string(typ)
	switch t {
	case "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT":
		return true, false
	case "REASONING_ENCRYPTED_VALUE", "TOOL_CALL_RESULT", "CUSTOM":
		return false, t != "REASONING_ENCRYPTED_VALUE"
	}
	for _, p := range [...]string{"TEXT_MESSAGE_", "TOOL_CALL_", "REASONING_", "STATE_", "STEP_"} {
		if len(t) > len(p) && t[:len(p)] == p {
			return false, true
		}
	}
	return false, false
}

// ignores reports whether the lanes can have no business with an event of
// type typ: none is open, and it is no chunk (a text delta, mostly). Small
// enough to inline, so that such an event costs no call (wants).
func (l *chunkLanes) ignores(typ []byte) bool {
	return len(l.open_) == 0 && !l.oldOpen && chunkKindOf(typ) == 0
}

// wants reports whether an event without a tag, which the lanes do not
// ignore, concerns them: a chunk carrying an id (or that may: the key is in
// its bytes), an id-less one that is to be made explicit, and while a
// stream is open, the events that close one. Read-only. An id-less
// continuation of the old consumer's one stream, the streaming path, costs
// a byte search.
func (l *chunkLanes) wants(typ, ev []byte) bool {
	if k := chunkKindOf(typ); k != 0 {
		_, rewrite := l.target("", false, k)
		switch bytes.Count(ev, k.quotedKey()) {
		case 0:
			return rewrite
		case 1:
			// The one lane's stream, the old consumer's too, named again:
			// with the id or without it, nothing changes.
			return rewrite || !l.oldOpen || l.old.kind != k || len(l.open_) != 1 || l.open_[0].kind != k ||
				l.open_[0].id != l.old.id || !bytes.Contains(ev, l.old.needle)
		}
		return true
	}
	all, own := closing(typ)
	return all || own
}

// event applies a non-chunk event of lane.
func (l *chunkLanes) event(typ []byte, lane string) {
	if len(l.open_) == 0 && !l.oldOpen {
		return
	}
	all, own := closing(typ)
	switch {
	case all:
		l.open_ = l.open_[:0]
	case own:
		l.closeLane(lane)
	default:
		return
	}
	// The old consumer has one stream: whatever the lane, it closes.
	l.oldOpen = false
}

func (l *chunkLanes) closeLane(lane string) {
	for i := range l.open_ {
		if l.open_[i].lane == lane {
			l.open_ = append(l.open_[:i], l.open_[i+1:]...)
			return
		}
	}
}

// open applies a chunk carrying an id: it continues the lane that holds the
// id, else opens a stream in its own lane (closing the lane's other one).
// Either way it is the old consumer's stream now.
func (l *chunkLanes) open(lane string, kind chunkKind, id gjson.Result) {
	at := -1
	for i := range l.open_ {
		s := &l.open_[i]
		if s.kind == kind && s.id == id.Str {
			at = i
			break
		}
	}
	if at < 0 {
		for i := range l.open_ {
			if l.open_[i].lane == lane {
				at = i
				break
			}
		}
		if at < 0 {
			l.open_ = append(l.open_, laneStream{})
			at = len(l.open_) - 1
		}
		s := &l.open_[at]
		if s.raw != id.Raw || s.kind != kind || s.needle == nil {
			s.needle = append(append(append([]byte(nil), kind.quotedKey()...), ':'), id.Raw...)
		}
		s.lane, s.kind = clone(s.lane, lane), kind
		s.id, s.raw = clone(s.id, id.Str), clone(s.raw, id.Raw)
	}
	if !l.oldOpen || l.old.kind != kind || l.old.id != id.Str {
		l.old, l.oldOpen = l.open_[at], true
	}
}

// target returns the open stream a 1.0 consumer attaches an id-less chunk of
// lane to (nil when none or ambiguous), and whether the chunk needs its id
// made explicit for an old consumer: more than one lane has an open stream
// of its kind, or the old consumer's one stream is another.
func (l *chunkLanes) target(lane string, tagged bool, kind chunkKind) (t *laneStream, rewrite bool) {
	n := 0
	var only *laneStream
	for i := range l.open_ {
		s := &l.open_[i]
		if s.kind != kind {
			continue
		}
		n++
		only = s
		if s.lane == lane {
			t = s
		}
	}
	if t == nil && !tagged && n == 1 {
		t = only
	}
	if t == nil {
		return nil, false
	}
	return t, n > 1 || !l.oldOpen || l.old.kind != kind || l.old.id != t.id
}

// clone returns s, reusing old when it already says the same (no allocation
// on the streaming path, where one id repeats).
func clone(old, s string) string {
	if old == s {
		return old
	}
	return string([]byte(s))
}
