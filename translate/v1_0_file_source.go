package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// fileSourceParts drops, for consumers older than 1.0, the media parts whose
// source is {type:"file"} (new in 1.0: a provider-issued file handle) from
// the messages of MESSAGES_SNAPSHOT and RUN_STARTED.input. When nothing is
// left of a content array that had parts, the content becomes "" (the empty
// value the older schema requires). Only well-formed media parts (image,
// audio, video, document) go: a part with a file source and no media type,
// or a file source without its value, is malformed, and left for the
// consumer to refuse, never repaired.
//
// Lossy, with a warning: the file reference has no older equivalent, and
// 0.0.49–0.0.59 fail the whole run on an unknown source type (older ones on
// the media part itself). Tool messages are left to tool-parts-to-text, which
// drops every non-text part of them.
//
// Reference consumer: only 1.0 reads file sources.
var fileSourceParts = &Step{
	Name:        "file-source-parts",
	Description: "content parts with a file source are dropped from message snapshots and RUN_STARTED.input",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Types:       []string{"MESSAGES_SNAPSHOT", "RUN_STARTED"},
	NewEvent:    func() EventStep { return &fileSourceRun{} },
}

var fileSourceMark = []byte(`"file"`)

type fileSourceRun struct {
	rewriter
}

func (f *fileSourceRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if !bytes.Contains(ev, fileSourceMark) {
		emit(ev)
		return
	}
	msgs, shape := messagesOf(ev, string(r.EventType()))
	EachElement(msgs, func(_ int, m gjson.Result) {
		if Sub(m, "role").Str == "tool" {
			return
		}
		dropContentParts(&f.rewriter, Sub(m, "content"), func(p gjson.Result) bool {
			if !isFileMedia(p) {
				return false
			}
			r.Lost(shape+".content.source.file", "@ag-ui/client "+r.To.String()+" has no file source and fails the whole run on one",
				"@ag-ui/client 1.0 (file sources)")
			return true
		})
	})
	f.emit(ev, emit)
}

// isFileMedia reports whether the content part p is a well-formed media
// part whose source is a file. A malformed one (no media type, a file
// source without its value) is the consumer's to refuse: dropping it would
// repair it.
func isFileMedia(p gjson.Result) bool {
	return isMediaType(Sub(p, "type").Str) && Sub(Sub(p, "source"), "type").Str == "file" &&
		!malformedPart(p)
}

// dropContentParts records the removal of the parts of a content array
// (document offsets) for which drop is true; when every part goes, the
// content becomes "" instead. drop is called once per part, in order. It
// reports how many parts go.
func dropContentParts(w *rewriter, content gjson.Result, drop func(p gjson.Result) bool) int {
	if !content.IsArray() {
		return 0
	}
	w.items = Items(content, w.items[:0])
	if len(w.items) == 0 {
		return 0
	}
	// Verdicts first: how many go decides between "" and deleting them.
	n := 0
	w.drops = w.drops[:0]
	for _, it := range w.items {
		d := drop(it.Value)
		if d {
			n++
		}
		w.drops = append(w.drops, d)
	}
	switch {
	case n == 0:
	case n == len(w.items):
		w.ed.SetValueString(content, `""`)
	default:
		w.ed.DeleteItems(w.items, func(i int) bool { return w.drops[i] })
	}
	return n
}
