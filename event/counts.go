package event

// Label values of the events direction.
const (
	FromProducer = 0 // events and bytes read from the producer
	ToConsumer   = 1 // events and bytes written to the consumer
)

// Event type labels: the index of a type in a run's Counts.
const (
	numKnownEventTypes = 36
	evOther            = numKnownEventTypes     // a type that is not below
	evInvalid          = numKnownEventTypes + 1 // a data frame without a string type
	evComment          = numKnownEventTypes + 2 // a frame without data
	// NumLabels is the number of event type labels.
	NumLabels = numKnownEventTypes + 3
)

// Label returns the label of an event type index.
func Label(i int) string { return eventLabels[i] }

// Count is what a run relayed of one event type in one direction.
type Count struct{ Events, Bytes int }

// Counts are a run's events and bytes by direction (FromProducer,
// ToConsumer) and event type index (see Label), kept by the Stream when
// its Counts is set.
type Counts struct {
	By [2][NumLabels]Count
}

// Malformed counts the data frames read from the producer without a string
// type.
func (c *Counts) Malformed() int { return c.By[FromProducer][evInvalid].Events }

// Unrecognised counts the events read from the producer of a type no
// version describes.
func (c *Counts) Unrecognised() int { return c.By[FromProducer][evOther].Events }

// add counts one event of label index ti (eventIndex, or evComment), n
// bytes, in direction dir.
func (c *Counts) add(dir, ti, n int) {
	e := &c.By[dir][ti]
	e.Events++
	e.Bytes += n
}

// eventLabels are the event type label values, by index: the 31 event
// types of 1.0, the five THINKING_* types, then other, invalid, comment.
var eventLabels = [NumLabels]string{
	"ACTIVITY_DELTA",
	"ACTIVITY_SNAPSHOT",
	"CUSTOM",
	"MESSAGES_SNAPSHOT",
	"RAW",
	"REASONING_ENCRYPTED_VALUE",
	"REASONING_END",
	"REASONING_MESSAGE_CHUNK",
	"REASONING_MESSAGE_CONTENT",
	"REASONING_MESSAGE_END",
	"REASONING_MESSAGE_START",
	"REASONING_START",
	"RUN_ERROR",
	"RUN_FINISHED",
	"RUN_STARTED",
	"STATE_DELTA",
	"STATE_SNAPSHOT",
	"STEP_FINISHED",
	"STEP_STARTED",
	"SUBAGENT_ERROR",
	"SUBAGENT_FINISHED",
	"SUBAGENT_STARTED",
	"TEXT_MESSAGE_CHUNK",
	"TEXT_MESSAGE_CONTENT",
	"TEXT_MESSAGE_END",
	"TEXT_MESSAGE_START",
	"TOOL_CALL_ARGS",
	"TOOL_CALL_CHUNK",
	"TOOL_CALL_END",
	"TOOL_CALL_RESULT",
	"TOOL_CALL_START",
	"THINKING_END",
	"THINKING_START",
	"THINKING_TEXT_MESSAGE_CONTENT",
	"THINKING_TEXT_MESSAGE_END",
	"THINKING_TEXT_MESSAGE_START",
	"other", "invalid", "comment",
}

// eventIndex returns the label index of an event type (rules.PeekType's result:
// nil when the frame has no string type). A switch on string(typ) neither
// allocates nor hashes.
func eventIndex(typ []byte) int {
	if len(typ) == 0 {
		return evInvalid
	}
	switch string(typ) {
	case "ACTIVITY_DELTA":
		return 0
	case "ACTIVITY_SNAPSHOT":
		return 1
	case "CUSTOM":
		return 2
	case "MESSAGES_SNAPSHOT":
		return 3
	case "RAW":
		return 4
	case "REASONING_ENCRYPTED_VALUE":
		return 5
	case "REASONING_END":
		return 6
	case "REASONING_MESSAGE_CHUNK":
		return 7
	case "REASONING_MESSAGE_CONTENT":
		return 8
	case "REASONING_MESSAGE_END":
		return 9
	case "REASONING_MESSAGE_START":
		return 10
	case "REASONING_START":
		return 11
	case "RUN_ERROR":
		return 12
	case "RUN_FINISHED":
		return 13
	case "RUN_STARTED":
		return 14
	case "STATE_DELTA":
		return 15
	case "STATE_SNAPSHOT":
		return 16
	case "STEP_FINISHED":
		return 17
	case "STEP_STARTED":
		return 18
	case "SUBAGENT_ERROR":
		return 19
	case "SUBAGENT_FINISHED":
		return 20
	case "SUBAGENT_STARTED":
		return 21
	case "TEXT_MESSAGE_CHUNK":
		return 22
	case "TEXT_MESSAGE_CONTENT":
		return 23
	case "TEXT_MESSAGE_END":
		return 24
	case "TEXT_MESSAGE_START":
		return 25
	case "TOOL_CALL_ARGS":
		return 26
	case "TOOL_CALL_CHUNK":
		return 27
	case "TOOL_CALL_END":
		return 28
	case "TOOL_CALL_RESULT":
		return 29
	case "TOOL_CALL_START":
		return 30
	case "THINKING_END":
		return 31
	case "THINKING_START":
		return 32
	case "THINKING_TEXT_MESSAGE_CONTENT":
		return 33
	case "THINKING_TEXT_MESSAGE_END":
		return 34
	case "THINKING_TEXT_MESSAGE_START":
		return 35
	}
	return evOther
}
