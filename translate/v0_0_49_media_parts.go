package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// mediaToBinary downgrades, for consumers 0.0.41–0.0.48, the image, audio,
// video and document content parts of user messages (in MESSAGES_SNAPSHOT
// and RUN_STARTED.input) to the legacy binary part those consumers read:
// {type:"binary", mimeType, data | url, filename ← metadata.filename}.
//
// Lossless for a data source, and for a url source that names its mimeType:
// the part's id and the rest of its metadata are annotation-only (the
// consumer would strip them silently). Lossy otherwise: a url source without
// mimeType, or a file source (a provider handle), has no binary equivalent
// (binary requires a mimeType and carries data or a url), so the part is
// dropped with a warning (when no part is left, the content becomes "", as
// file-source-parts does). A malformed part (a data source without mimeType, a
// non-string value) is left as it is for the consumer to report; a
// translation never repairs.
//
// Reference consumer: clients before 0.0.49 know only text and binary parts
// and fail the whole run on any other part type (legacy-profiles §4(e)).
// Consumers before 0.0.41 read no parts at all: there the user-parts step
// (v0_0_41_user_parts.go) drops every non-text part, naming it, and this step
// leaves the message to it; they also ignore RUN_STARTED.input.
var mediaToBinary = &Step{
	Name:        "media-to-binary",
	Description: "image/audio/video/document parts of user messages become legacy binary parts; parts binary cannot carry are dropped",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 49},
	Lossy:       true,
	Types:       []string{"MESSAGES_SNAPSHOT", "RUN_STARTED"},
	NewEvent:    func() EventStep { return &mediaRun{} },
}

const mediaUpgrade = "a consumer that reads media parts (AG-UI 0.0.49 or newer)"

// partsBoundary is the first consumer release that reads content parts.
var partsBoundary = negotiate.Version{Patch: 41}

type mediaRun struct {
	rewriter
}

// sourceMark is in every media part; an event without it has none.
var sourceMark = []byte(`"source"`)

func (m *mediaRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if r.To.Less(partsBoundary) || !bytes.Contains(ev, sourceMark) {
		emit(ev)
		return
	}
	msgs, shape := messagesOf(ev, string(r.EventType()))
	mediaPartsToBinary(r, &m.rewriter, msgs, shape)
	m.emit(ev, emit)
}

// mediaPartsToBinary records in w the downgrade of the media parts of the
// user messages in msgs (read from the edited document); when nothing is
// left of a content array, it becomes "" (dropContentParts). The input
// direction shares it.
func mediaPartsToBinary(r *Run, w *rewriter, msgs gjson.Result, shape string) {
	EachElement(msgs, func(_ int, msg gjson.Result) {
		if Sub(msg, "role").Str != "user" {
			return
		}
		dropContentParts(w, Sub(msg, "content"), func(p gjson.Result) bool {
			return mediaPart(r, &w.ed, p, shape) == mediaDrop
		})
	})
}

type mediaVerdict int

const (
	mediaKeep    mediaVerdict = iota // not a media part, or malformed: untouched
	mediaConvert                     // rewritten to binary (recorded in ed)
	mediaDrop                        // no binary equivalent: the caller deletes it
)

// isMediaType reports whether a content part of type t is a media part,
// the parts that carry a source.
func isMediaType(t string) bool {
	switch t {
	case "image", "audio", "video", "document":
		return true
	}
	return false
}

// mediaPart records the conversion of one part p to binary, or says it must
// be dropped (with the warning given), or that it is not this step's.
func mediaPart(r *Run, ed *Edits, p gjson.Result, shape string) mediaVerdict {
	ptype := Sub(p, "type")
	if !isMediaType(ptype.Str) || malformedPart(p) {
		return mediaKeep // malformed for 1.0 (a file source without its value): the consumer reports it
	}
	src := Sub(p, "source")
	value, mime := Sub(src, "value"), Sub(src, "mimeType")
	var key string
	switch Sub(src, "type").Str {
	case "data":
		key = "data"
	case "url":
		if !mime.Exists() && value.Type == gjson.String {
			r.Lost(shape+".content."+ptype.Str+"(url source without mimeType)",
				"a legacy binary part requires a mimeType, and the part's url source names none",
				mediaUpgrade)
			return mediaDrop
		}
		key = "url"
	case "file":
		r.Lost(shape+".content."+ptype.Str+"(file source)",
			"a provider file handle has no legacy binary equivalent (binary carries inline data or a url)",
			mediaUpgrade)
		return mediaDrop
	default:
		return mediaKeep // unknown or missing source: not a shape this step knows
	}
	if value.Type != gjson.String || mime.Type != gjson.String {
		return mediaKeep // malformed: the consumer reports it
	}
	mark := ed.Begin()
	ed.AppendString(`{"type":"binary","mimeType":`)
	ed.AppendString(mime.Raw)
	ed.AppendString(`,"` + key + `":`)
	ed.AppendString(value.Raw)
	if fn := Sub(Sub(p, "metadata"), "filename"); fn.Type == gjson.String {
		ed.AppendString(`,"filename":`)
		ed.AppendString(fn.Raw)
	}
	ed.AppendString(`}`)
	ed.Commit(p.Index, p.Index+len(p.Raw), mark)
	r.Translated(shape + ".content." + ptype.Str)
	return mediaConvert
}
