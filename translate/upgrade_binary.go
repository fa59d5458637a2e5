package translate

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// binaryToMedia upgrades the retired `binary` content parts of
// MESSAGES_SNAPSHOT and RUN_STARTED.input messages to the media parts that
// replace them, for 1.0 consumers (0.0.41–0.0.59 read `binary` natively).
//
// Mapping (the 1.0 client's, protocol-1.0 §2.11): the MIME prefix picks the
// part type (image/, audio/, video/, anything else document); `data` becomes
// source {type:"data", value, mimeType}, else `url` becomes source
// {type:"url", value, mimeType}; `filename` becomes metadata.filename. Values
// are copied as raw JSON.
//
// Lossless, except a part that carries only an `id` (a file reference with no
// content): it has no media equivalent and is dropped with a warning. A part
// that is malformed (mimeType or data/url not strings) is left as it is: an
// upgrade does not repair.
//
// Reference consumer: the 1.0 client's CompatibilityBoundary converts the
// same way and leaves an id-only part for enforcement to strip with a
// warning; the relay drops it itself so the warning names the shape.
var binaryToMedia = &Step{
	Name:        "binary-to-media",
	Description: "legacy binary content parts in message snapshots and RUN_STARTED.input become image/audio/video/document parts",
	Kind:        Upgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Lossy:       true,
	Types:       []string{"MESSAGES_SNAPSHOT", "RUN_STARTED"},
	NewEvent:    func() EventStep { return &binaryRun{} },
}

type binaryRun struct {
	rewriter
	parts []Item
}

var binaryMark = []byte(`"binary"`)

func (b *binaryRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if !bytes.Contains(ev, binaryMark) {
		emit(ev)
		return
	}
	msgs, shape := messagesOf(ev, string(r.EventType()))
	b.upgradeMessages(r, msgs, shape, "a producer that sends media parts (image/audio/video/document) with a data or url source")
	b.emit(ev, emit)
}

// upgradeMessages records, for every message of msgs (document offsets),
// the conversion of its binary parts to media parts and the removal of
// id-only ones, which have no media equivalent (a lossy step: upgrade names
// what the peer should send instead). Both directions share it.
func (b *binaryRun) upgradeMessages(r *Run, msgs gjson.Result, shape, upgrade string) {
	w := &b.rewriter
	EachElement(msgs, func(_ int, m gjson.Result) {
		content := Sub(m, "content")
		if !content.IsArray() {
			return
		}
		b.parts = Items(content, b.parts[:0])
		w.ed.DeleteItems(b.parts, func(i int) bool {
			p := b.parts[i].Value
			if Sub(p, "type").Str != "binary" {
				return false
			}
			if Sub(p, "data").Exists() || Sub(p, "url").Exists() || !Sub(p, "id").Exists() {
				b.convert(r, p, shape)
				return false
			}
			r.Lost(shape+".content.binary(id only)",
				"a binary part with only an id (a file reference, no data or url) has no media-part equivalent",
				upgrade)
			return true
		})
	})
}

// convert records the rewrite of one binary part p (document offsets) to a
// media part. It leaves malformed parts alone; the caller drops id-only ones.
func (b *binaryRun) convert(r *Run, p gjson.Result, shape string) {
	mime := Sub(p, "mimeType")
	src, srcType := Sub(p, "data"), "data"
	if !src.Exists() {
		src, srcType = Sub(p, "url"), "url"
	}
	if mime.Type != gjson.String || src.Type != gjson.String {
		return
	}
	filename := Sub(p, "filename")
	partType := "document"
	switch m := mime.Str; { // case-sensitive, as the reference client matches
	case strings.HasPrefix(m, "image/"):
		partType = "image"
	case strings.HasPrefix(m, "audio/"):
		partType = "audio"
	case strings.HasPrefix(m, "video/"):
		partType = "video"
	}
	ed := &b.ed
	mark := ed.Begin()
	ed.AppendString(`{"type":"` + partType + `","source":{"type":"` + srcType + `","value":`)
	ed.AppendString(src.Raw)
	ed.AppendString(`,"mimeType":`)
	ed.AppendString(mime.Raw)
	ed.AppendString(`}`)
	if filename.Exists() {
		ed.AppendString(`,"metadata":{"filename":`)
		ed.AppendString(filename.Raw)
		ed.AppendString(`}`)
	}
	ed.AppendString(`}`)
	ed.Commit(p.Index, p.Index+len(p.Raw), mark)
	r.Translated(shape + ".content.binary")
}
