package translate

import (
	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// toolPartsToText flattens, for consumers older than 1.0, tool content given
// as content parts (new in 1.0) to the string they read: TOOL_CALL_RESULT
// .content, and the content of tool messages in MESSAGES_SNAPSHOT and
// RUN_STARTED.input. The text parts are concatenated (as the 1.0 core's
// contentToText does), their escaped bytes copied as they were; every other
// part is dropped.
//
// Lossless when the parts are all text (a text part's id and metadata are
// annotations no older consumer reads); lossy, with a warning naming the part
// type, when a media or unknown part is dropped. Content with a malformed
// part (not an object, no string type, a text part without a string text, a
// media part without a well-formed source: see flattenParts) is passed on:
// a downgrade does not repair.
//
// Reference consumer: 0.0.x accept only a string there and fail the whole
// run on an array.
var toolPartsToText = &Step{
	Name:        "tool-parts-to-text",
	Description: "tool results and tool messages given as content parts are flattened to their text; other parts are dropped",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Types:       []string{"TOOL_CALL_RESULT", "MESSAGES_SNAPSHOT", "RUN_STARTED"},
	NewEvent:    func() EventStep { return &toolPartsRun{} },
}

type toolPartsRun struct {
	rewriter
	lost []string // part types dropped from the content at hand
}

func (t *toolPartsRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := string(r.EventType())
	if typ == "TOOL_CALL_RESULT" {
		t.flatten(r, Get(ev, "content"), "TOOL_CALL_RESULT.content")
	} else {
		msgs, shape := messagesOf(ev, typ)
		EachElement(msgs, func(_ int, m gjson.Result) {
			if Sub(m, "role").Str == "tool" {
				t.flatten(r, Sub(m, "content"), shape+".content")
			}
		})
	}
	t.emit(ev, emit)
}

// flatten records the replacement of a parts array (document offsets) by the
// JSON string of its text (see flattenParts; a malformed part leaves the
// content as it is).
func (t *toolPartsRun) flatten(r *Run, content gjson.Result, shape string) {
	var ok bool
	if t.lost, ok = flattenParts(&t.ed, content, t.lost[:0]); !ok {
		return
	}
	r.Translated(shape + " (parts)")
	for _, p := range t.lost {
		r.Lost(shape+"."+p, "@ag-ui/client "+r.To.String()+" reads tool content as a string: only the text parts were kept",
			"@ag-ui/client 1.0 (content parts in tool results and tool messages)")
	}
}

// partShape names a content-part type for a warning; types no version
// describes are named together, so that producer data cannot grow the set
// of shapes without bound.
func partShape(typ string) string {
	switch typ {
	case "text", "binary", "image", "audio", "video", "document":
		return typ
	}
	return "(unknown part type)"
}
