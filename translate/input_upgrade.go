package translate

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// inputActivity removes activity messages from RunAgentInput.messages, for
// every producer: activity messages are the consumer's rendering material,
// not conversation, and never travel back (spec 003, messages).
//
// Lossless and silent, as the reference client removes them
// (prepareRunAgentInput, protocol-1.0 §2.2; 0.0.41+ filter them too). Only
// clients up to 0.0.40 sent them. It is an upgrade with a zero Since so that
// it runs toward every producer; but a run the relay forwards untranslated
// (consumer and producer speak the same version) is forwarded byte for byte,
// activity messages included, as the plan decides.
var inputActivity = &Step{
	Name:        "drop-activity-input",
	Description: "activity messages are removed from the input: they never reach the producer",
	Kind:        Upgrade,
	Direction:   Input,
	Since:       negotiate.Version{},
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, activityMark) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			var drop []bool
			dropRole(r, &w.ed, &w.items, &drop, Sub(root, "messages"), "activity", inputMessages+".activity", "", "")
		})
	},
}

// inputBinaryToMedia upgrades the legacy binary content parts a consumer
// before 1.0 sends to the media parts a 1.0 producer reads (1.0 rejects
// binary), with the event step's mapping (upgrade_binary.go): the MIME
// prefix picks image/audio/video/document, data or url becomes the source,
// filename becomes metadata.filename, raw values copied.
//
// Lossless, except a binary part that carries only an id (a file reference,
// no content): it has no media equivalent and is dropped with a warning. A
// malformed binary part is left for the producer to report.
//
// Reference consumer: the 1.0 client's CompatibilityBoundary upgrades its own
// outgoing binary parts silently (protocol-1.0 §2.3) and leaves an id-only
// part for enforcement to strip with a warning.
var inputBinaryToMedia = &Step{
	Name:        "binary-to-media-input",
	Description: "legacy binary content parts in the input become image/audio/video/document parts",
	Kind:        Upgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, binaryMark) {
			return in
		}
		var b binaryRun
		b.upgradeMessages(r, Sub(Root(in), "messages"), inputMessages,
			"a consumer that sends media parts (image/audio/video/document) with a data or url source")
		return applyInput(in, &b.ed)
	},
}

// inputNulls removes, toward a producer of 1.0 or newer, the nulls a legacy
// consumer sends for optional members, which 1.0 rejects: at the top level
// parentRunId, state, tools, context, resume; in messages name, content
// (assistant), toolCalls, encryptedValue, subagentRunId, metadata, error; in
// tool calls encryptedValue, metadata; in content parts id, metadata and the
// source's optional mimeType and provider; in tools parameters, metadata; in
// resume entries payload, metadata.
//
// Lossless and silent: in the versions that allowed it, each such null meant
// absent. forwardedProps is never touched, not even a null: it reaches the
// producer as the consumer sent it. A null in a required member is
// malformed and passes on for the producer to report.
//
// Reference consumer: the 1.0 client's omitOptionalNulls does this to its
// own outgoing input, silently (protocol-1.0 §2.4), from the generated list
// of optional fields.
var inputNulls = &Step{
	Name:        "null-means-absent-input",
	Description: "nulls a legacy consumer sends for absent optional input members are removed (never forwardedProps)",
	Kind:        Upgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, nullLit) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			n := nullDropper{r: r, ed: &w.ed}
			n.drop(root, "RunAgentInput", "parentRunId", "state", "tools", "context", "resume")
			EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
				keys := []string{"name", "encryptedValue", "subagentRunId", "metadata"}
				switch Sub(m, "role").Str {
				case "assistant":
					keys = append(keys, "content", "toolCalls")
				case "tool":
					keys = append(keys, "error")
				}
				n.drop(m, inputMessages, keys...)
				EachElement(Sub(m, "toolCalls"), func(_ int, tc gjson.Result) {
					n.drop(tc, inputMessages+".toolCalls", "encryptedValue", "metadata")
				})
				EachElement(Sub(m, "content"), func(_ int, p gjson.Result) {
					n.drop(p, inputMessages+".content", "id", "metadata")
					n.drop(Sub(p, "source"), inputMessages+".content.source", "mimeType", "provider")
				})
			})
			EachElement(Sub(root, "tools"), func(_ int, t gjson.Result) {
				n.drop(t, "RunAgentInput.tools", "parameters", "metadata")
			})
			EachElement(Sub(root, "resume"), func(_ int, e gjson.Result) {
				n.drop(e, "RunAgentInput.resume", "payload", "metadata")
			})
		})
	},
}

// nullDropper records the removal of null members of objects.
type nullDropper struct {
	r     *Run
	ed    *Edits
	items []Item
}

// drop records the removal of obj's members named in keys whose value is
// null, each counted as shape.<key>:null.
func (n *nullDropper) drop(obj gjson.Result, shape string, keys ...string) {
	if !obj.IsObject() || !strings.Contains(obj.Raw, "null") {
		return
	}
	n.items = Items(obj, n.items[:0])
	n.ed.DeleteItems(n.items, func(i int) bool {
		it := n.items[i]
		if it.Value.Type != gjson.Null {
			return false
		}
		for _, k := range keys {
			if it.Key.Str == k {
				n.r.Translated(shape + "." + k + ":null")
				return true
			}
		}
		return false
	})
}
