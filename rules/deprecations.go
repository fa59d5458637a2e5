package rules

import (
	"sort"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Deprecation is one retired shape: a shape the protocol once described and
// no longer does, with what replaces it and where its translation lives
// (spec 000, "Retired shapes").
type Deprecation struct {
	// Shape is the retired shape, as Finding.Shape names it.
	Shape string
	// Replacement is what a current reader gets instead.
	Replacement string
	// Step names the translate/ step that upgrades it.
	Step string
	// Retired is the version that stopped describing the shape.
	Retired negotiate.Version
	// Expires is the day the translation may be removed; from then on the
	// shape is unrecognised like anything else.
	Expires time.Time
}

// LiveAt reports whether the translation still runs at t. The time is a
// parameter so that callers (and tests) choose their clock.
func (d Deprecation) LiveAt(t time.Time) bool { return t.Before(d.Expires) }

// thinkingExpiry is the date the 1.0 reference packages give for the
// THINKING_* translation; the other 1.0 retirements use it too, the
// references giving no other.
var thinkingExpiry = time.Date(2027, 9, 17, 0, 0, 0, 0, time.UTC)

var v1_0 = negotiate.Version{Major: 1}

// Step names, shared with translate/.
const (
	StepThinkingToReasoning = "thinking-to-reasoning"
	StepBinaryToMedia       = "binary-to-media"
	StepNullMeansAbsent     = "null-means-absent"
	StepReasoningRole       = "reasoning-role"
	StepAbsentMeansNull     = "absent-means-null"
)

// ReasoningRoleAssistant is the registry shape of a REASONING_MESSAGE_START
// whose role is "assistant".
const ReasoningRoleAssistant = `REASONING_MESSAGE_START.role:"assistant"`

// deprecations is the registry, sorted by Shape (an invariant test checks
// it, and that no retired shape is still described by 1.0).
var deprecations = []Deprecation{
	{"CUSTOM.value:absent", "value null", StepAbsentMeansNull, v1_0, thinkingExpiry},
	{"RAW.event:absent", "event null", StepAbsentMeansNull, v1_0, thinkingExpiry},
	{ReasoningRoleAssistant, `role "reasoning"`, StepReasoningRole, v1_0, thinkingExpiry},
	{"RUN_FINISHED.outcome:null", "outcome omitted (success)", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"RUN_FINISHED.result:null", "result omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"RUN_STARTED.input.forwardedProps:null", "forwardedProps omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"RUN_STARTED.input.resume[].payload:null", "payload omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"RUN_STARTED.input.tools[].parameters:null", "parameters omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"STATE_SNAPSHOT.snapshot:absent", "snapshot null", StepAbsentMeansNull, v1_0, thinkingExpiry},
	{"SUBAGENT_FINISHED.result:null", "result omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"THINKING_END", "REASONING_END", StepThinkingToReasoning, v1_0, thinkingExpiry},
	{"THINKING_START", "REASONING_START (title dropped)", StepThinkingToReasoning, v1_0, thinkingExpiry},
	{"THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", StepThinkingToReasoning, v1_0, thinkingExpiry},
	{"THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END", StepThinkingToReasoning, v1_0, thinkingExpiry},
	{"THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START (role reasoning)", StepThinkingToReasoning, v1_0, thinkingExpiry},
	{"TOOL_CALL_CHUNK.parentMessageId:null", "parentMessageId omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"TOOL_CALL_START.parentMessageId:null", "parentMessageId omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"binary content part", "image/audio/video/document part with a data or url source", StepBinaryToMedia, v1_0, thinkingExpiry},
	{"media-part metadata:null", "metadata omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
	{"rawEvent:null", "rawEvent omitted", StepNullMeansAbsent, v1_0, thinkingExpiry},
}

// Deprecations returns the registry, sorted by shape. The slice is a copy.
func Deprecations() []Deprecation { return append([]Deprecation(nil), deprecations...) }

// LookupDeprecation finds the registry entry of a retired shape
// (Finding.Shape of a Retired finding).
func LookupDeprecation(shape string) (Deprecation, bool) {
	i := sort.Search(len(deprecations), func(i int) bool { return deprecations[i].Shape >= shape })
	if i < len(deprecations) && deprecations[i].Shape == shape {
		return deprecations[i], true
	}
	return Deprecation{}, false
}
