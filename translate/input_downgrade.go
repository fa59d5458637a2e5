package translate

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Input downgrades of the 0.0.40–0.0.59 changes, toward producers on an
// older core. The boundaries are core versions (producers import the core
// directly), one step per change.

// inputSubagentRunID strips subagentRunId from the input's messages for
// producers before 0.0.59.
//
// Lossless and silent: the messages still arrive; they flatten into one
// thread, the example the versioning draft gives of a lossless downgrade.
// Reference consumer: the 1.0 client's BackwardCompatibility_0_0_57 does the
// same to its input (protocol-1.0 §2.3).
var inputSubagentRunID = &Step{
	Name:        "strip-subagent-run-id-input",
	Description: "subagentRunId is removed from input messages for producers that predate subagents",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 59},
	Input: func(r *Run, in []byte) []byte {
		return stripMessageMembers(r, in, "subagentRunId", false)
	},
}

// inputResume strips resume for producers before 0.0.54, which have no
// interrupts.
//
// Lossy, with a warning when entries are dropped: the run cannot resume the
// interrupts the consumer answered (an empty list carries nothing and goes
// silently). Reference consumer: those cores strip it silently; the 1.0
// client does not remove it for an older agent (legacy-profiles §5).
var inputResume = &Step{
	Name:        "strip-resume-input",
	Description: "resume is removed for producers that predate interrupts",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 54},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			w.items = Items(root, w.items[:0])
			w.ed.DeleteItems(w.items, func(i int) bool {
				it := w.items[i]
				if it.Key.Str != "resume" {
					return false
				}
				if it.Value.IsArray() && len(it.Value.Array()) == 0 {
					r.Translated("RunAgentInput.resume")
				} else {
					r.Lost("RunAgentInput.resume", "producers before 0.0.54 have no interrupts: the run cannot resume the interrupts it answers",
						"a producer on @ag-ui/core 0.0.54 or newer (interrupts and resume)")
				}
				return true
			})
		})
	},
}

// inputMediaToBinary downgrades media parts in user messages to legacy
// binary parts for producers on cores 0.0.40–0.0.48, with the event step's
// mapping (v0_0_49_media_parts.go): lossless with a data source or a url
// source that names its mimeType; a url source without mimeType or a file
// source is dropped with a warning. Before 0.0.40 the content flattening
// step drops every non-text part itself, naming it.
var inputMediaToBinary = &Step{
	Name:        "media-to-binary-input",
	Description: "image/audio/video/document parts of user messages become legacy binary parts; parts binary cannot carry are dropped",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 49},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		if r.To.Less(inputPartsBoundary) || !bytes.Contains(in, sourceMark) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			mediaPartsToBinary(r, w, Sub(root, "messages"), inputMessages)
		})
	},
}

// inputPartsBoundary is the first core that reads content parts.
var inputPartsBoundary = negotiate.Version{Patch: 40}

// inputReasoning drops reasoning messages for producers before 0.0.45, whose
// core rejects the whole input on the role.
//
// Lossy, with a warning: the producer does not see the reasoning the
// conversation carried. Reference consumer: the 1.0 client leaves them in
// for an older agent (a gap, legacy-profiles §5).
var inputReasoning = &Step{
	Name:        "drop-reasoning-input",
	Description: "reasoning messages are removed for producers that predate them",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 45},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, reasoningRole) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			dropRole(r, &w.ed, &w.items, Sub(root, "messages"), "reasoning", inputMessages+".reasoning",
				"producers before 0.0.45 have no reasoning messages and reject the input on one",
				"a producer on @ag-ui/core 0.0.45 or newer (reasoning)")
		})
	},
}

// inputEncryptedValue strips encryptedValue from the input's messages and
// their tool calls for producers before 0.0.45.
//
// Lossless for those producers, and silent: they have no use for a
// provider's encrypted reasoning and strip the member unread.
var inputEncryptedValue = &Step{
	Name:        "strip-encrypted-value-input",
	Description: "encryptedValue is removed from input messages and tool calls for producers that predate it",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 45},
	Input: func(r *Run, in []byte) []byte {
		return stripMessageMembers(r, in, "encryptedValue", true)
	},
}

// inputParentRunID strips parentRunId for producers before 0.0.40.
//
// Lossless for them and silent: their core strips it unread. Reference
// consumer: the 1.0 client's BackwardCompatibility_0_0_39 removes it.
var inputParentRunID = &Step{
	Name:        "strip-parent-run-id-input",
	Description: "parentRunId is removed for producers that predate it",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 40},
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, []byte(`"parentRunId"`)) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			stripMember(r, w, root, "RunAgentInput", "parentRunId")
		})
	},
}

// inputFlattenContent gives every message the string content cores before
// 0.0.40 read: array content becomes the concatenated text of its text
// parts, absent content becomes "".
//
// Lossless for text-only content, and "" is the empty value the older schema
// requires (permitted reshaping). Lossy, with a warning naming the part type,
// when binary or media parts are dropped. A malformed part (not an object, no
// string type, a text part whose text is not a string, a media part without
// a well-formed source: see flattenParts) leaves its message untouched for
// the producer to report, and so does content that is neither absent, a
// string nor an array (null, a number).
//
// Reference consumer: the 1.0 client's BackwardCompatibility_0_0_39 does
// exactly this to its input (protocol-1.0 §2.3).
var inputFlattenContent = &Step{
	Name:        "flatten-content-input",
	Description: "array message content becomes the text of its text parts, absent content the empty string, for producers that predate parts",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Patch: 40},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			var lost []string
			EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
				if !m.IsObject() {
					return
				}
				if !Sub(m, "content").Exists() {
					w.items = Items(m, w.items[:0])
					w.ed.AppendMember(m, len(w.items) > 0, "content", []byte(`""`))
					r.Translated(inputMessages + ".content(absent)")
					return
				}
				lost = flattenContent(r, &w.ed, m, inputMessages,
					"producers before 0.0.40 read message content as a string only",
					"a producer on @ag-ui/core 0.0.40 or newer (content parts)", lost)
			})
		})
	},
}

// stripMessageMembers removes the member key from every message of the
// input (and, when toolCalls, from every tool call of assistant messages),
// silently: each removal is counted as translated.
func stripMessageMembers(r *Run, in []byte, key string, toolCalls bool) []byte {
	if !bytes.Contains(in, []byte(`"`+key+`"`)) {
		return in
	}
	return inputEdit(in, func(w *rewriter, root gjson.Result) {
		EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
			stripMember(r, w, m, inputMessages, key)
			if toolCalls {
				EachElement(Sub(m, "toolCalls"), func(_ int, tc gjson.Result) {
					stripMember(r, w, tc, inputMessages+".toolCalls", key)
				})
			}
		})
	})
}

// stripMember records the removal of obj's members named key, silently:
// each is counted as translated on shape.key.
func stripMember(r *Run, w *rewriter, obj gjson.Result, shape, key string) {
	if !obj.IsObject() || !strings.Contains(obj.Raw, key) {
		return
	}
	w.items = Items(obj, w.items[:0])
	w.ed.DeleteItems(w.items, func(i int) bool {
		if w.items[i].Key.Str == key {
			r.Translated(shape + "." + key)
			return true
		}
		return false
	})
}
