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
// it runs toward every producer, and TranslateInput runs it on an input the
// plan forwards untranslated too: such an input goes byte for byte unless it
// holds activity messages, whose removal is then its only change.
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
			dropRole(r, &w.ed, &w.items, Sub(root, "messages"), "activity", inputMessages+".activity", "", "")
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
// consumer sent for optional members that its own release accepted as
// "absent" and 1.0 rejects: a null in an any-typed member (state,
// tools[].parameters, resume[].payload, media-part metadata), and a null in a
// member the consumer's release did not declare yet (it stripped it unread:
// resume before 0.0.54, encryptedValue before 0.0.45, metadata and
// subagentRunId before 0.0.59, Tool.metadata before 0.0.52, part ids and
// text-part metadata before 1.0, …). See inputNullKeys.
//
// Lossless and silent: each such null meant absent for the consumer that
// sent it. A null in a member the consumer's release declared with a type
// (message name, toolCalls, tool error, a declared encryptedValue or
// metadata), in a required member (tools, context, message content) or in
// assistant content (rejected by every release, legacy-profiles §3.4, §4(c))
// is malformed and passes on for the producer to report: a translation
// never repairs. forwardedProps is never touched, not even a null: it
// reaches the producer as the consumer sent it. A consumer of unknown
// version is taken to be current, whose nulls are all malformed but state's.
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
		from := r.From
		if from.IsZero() {
			from = negotiate.Current
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			n := nullDropper{r: r, ed: &w.ed, from: from}
			n.drop(root, "RunAgentInput", nullState, nullParentRunID, nullResume)
			EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
				n.drop(m, inputMessages, nullEncryptedValue, nullSubagentRunID, nullMetadata)
				EachElement(Sub(m, "toolCalls"), func(_ int, tc gjson.Result) {
					n.drop(tc, inputMessages+".toolCalls", nullEncryptedValue, nullMetadata)
				})
				EachElement(Sub(m, "content"), func(_ int, p gjson.Result) {
					if Sub(p, "type").Str == "binary" {
						n.drop(p, inputMessages+".content", nullBinaryID, nullPartMetadata)
					} else {
						n.drop(p, inputMessages+".content", nullPartID, nullPartMetadata)
					}
					src := Sub(p, "source")
					if Sub(src, "type").Str == "url" {
						n.drop(src, inputMessages+".content.source", nullURLMimeType, nullProvider)
					} else {
						n.drop(src, inputMessages+".content.source", nullProvider)
					}
				})
			})
			EachElement(Sub(root, "tools"), func(_ int, t gjson.Result) {
				n.drop(t, "RunAgentInput.tools", nullParameters, nullToolMetadata)
			})
			EachElement(Sub(root, "resume"), func(_ int, e gjson.Result) {
				n.drop(e, "RunAgentInput.resume", nullPayload, nullMetadata)
			})
		})
	},
}

// nullKey is an optional input member whose null may mean absent: it does
// for a consumer older than fatalFrom, the first release that rejected the
// null (the one that declared the member with a type; 1.0 for any-typed
// members, which 1.0 made non-null).
type nullKey struct {
	name      string
	fatalFrom negotiate.Version
}

var (
	// state: any-typed, and 1.0 itself reads its null as absent.
	nullState          = nullKey{"state", negotiate.Version{Major: 1 << 30}}
	nullParentRunID    = nullKey{"parentRunId", negotiate.Version{Patch: 41}} // core 0.0.40 = client 0.0.41
	nullResume         = nullKey{"resume", negotiate.Version{Patch: 54}}
	nullEncryptedValue = nullKey{"encryptedValue", negotiate.Version{Patch: 45}}
	nullSubagentRunID  = nullKey{"subagentRunId", negotiate.Version{Patch: 59}}
	nullMetadata       = nullKey{"metadata", negotiate.Version{Patch: 59}}
	nullBinaryID       = nullKey{"id", negotiate.Version{Patch: 41}}
	nullPartID         = nullKey{"id", negotiate.Version{Major: 1}}
	nullPartMetadata   = nullKey{"metadata", negotiate.Version{Major: 1}} // media: unknown-typed; text: undeclared
	nullURLMimeType    = nullKey{"mimeType", negotiate.Version{Patch: 49}}
	nullProvider       = nullKey{"provider", negotiate.Version{Major: 1}}
	nullParameters     = nullKey{"parameters", negotiate.Version{Major: 1}}
	nullToolMetadata   = nullKey{"metadata", negotiate.Version{Patch: 52}}
	nullPayload        = nullKey{"payload", negotiate.Version{Major: 1}}
)

// nullDropper records the removal of null members of objects.
type nullDropper struct {
	r     *Run
	ed    *Edits
	from  negotiate.Version // the consumer's release
	items []Item
}

// drop records the removal of obj's members named in keys whose value is
// null and meant absent for the consumer (it predates the key's fatalFrom),
// each counted as shape.<key>:null.
func (n *nullDropper) drop(obj gjson.Result, shape string, keys ...nullKey) {
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
			if it.Key.Str == k.name && n.from.Less(k.fatalFrom) {
				n.r.Translated(shape + "." + k.name + ":null")
				return true
			}
		}
		return false
	})
}
