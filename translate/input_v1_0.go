package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Input downgrades of the 1.0 changes, toward producers older than 1.0.
// protocolVersion is not a step: TranslateInput applies the plan's
// declaration (removed toward a producer that predates the field).

const v1InputUpgrade = "a producer on @ag-ui/core 1.0"

// inputToolsContextRequired adds "tools":[] and "context":[] to the input
// when absent: 1.0 made both optional, every older core requires them and
// rejects the input without them (legacy-profiles §3.4).
//
// Lossless and silent: an absent list and an empty one mean the same (spec
// 003), and supplying the empty value an older schema requires is permitted
// reshaping. A null (malformed for those producers) is left alone.
var inputToolsContextRequired = &Step{
	Name:        "tools-context-required-input",
	Description: "the input gets the empty tools and context lists cores before 1.0 require",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Input: func(r *Run, in []byte) []byte {
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			w.items = Items(root, w.items[:0])
			nonEmpty := len(w.items) > 0
			for _, key := range [...]string{"tools", "context"} {
				if Sub(root, key).Exists() {
					continue
				}
				w.ed.AppendMember(root, nonEmpty, key, emptyList)
				nonEmpty = true
				r.Translated("RunAgentInput." + key)
			}
		})
	},
}

// inputToolParts flattens the content parts of tool messages (new in 1.0) to
// the string older cores require: the concatenated text of the text parts,
// copied as escaped bytes.
//
// Lossless when every part is text; lossy, with a warning naming the part
// type, when a media part is dropped. Content with a malformed part is left
// for the producer to report.
//
// Reference consumer: the 1.0 client never downgrades tool-message parts for
// an older agent (a gap observed in its pinned-ceiling path,
// legacy-profiles §5); cores before 1.0 reject them.
var inputToolParts = &Step{
	Name:        "tool-parts-to-text-input",
	Description: "tool messages whose content is parts get the text of their text parts",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			var lost []string
			EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
				if Sub(m, "role").Str == "tool" {
					lost = flattenContent(r, &w.ed, m, inputMessages+".tool",
						"producers before 1.0 read tool-message content as a string only", v1InputUpgrade, lost)
				}
			})
		})
	},
}

// inputFileSource drops the media parts whose source is {type:"file"} (a
// provider file handle, new in 1.0) from the input's messages; when nothing
// is left of a content array, the content becomes "" (as the event step
// file-source-parts does, and only as it does: media parts). Tool messages
// are left to inputToolParts.
//
// Lossy, with a warning: the file reference has no older equivalent, and
// cores before 1.0 reject the whole input on it.
var inputFileSource = &Step{
	Name:        "file-source-parts-input",
	Description: "content parts with a file source are dropped from the input",
	Kind:        Downgrade,
	Direction:   Input,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Input: func(r *Run, in []byte) []byte {
		if !bytes.Contains(in, fileSourceMark) {
			return in
		}
		return inputEdit(in, func(w *rewriter, root gjson.Result) {
			EachElement(Sub(root, "messages"), func(_ int, m gjson.Result) {
				if Sub(m, "role").Str == "tool" {
					return
				}
				dropContentParts(w, Sub(m, "content"), func(p gjson.Result) bool {
					if !isFileMedia(p) {
						return false
					}
					r.Lost(inputMessages+".content.source.file",
						"producers before 1.0 have no file source and reject the input on one", v1InputUpgrade)
					return true
				})
			})
		})
	},
}
