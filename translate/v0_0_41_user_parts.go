package translate

import (
	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// userParts flattens, for consumers older than 0.0.41, the content parts of
// MESSAGES_SNAPSHOT messages to the one string those consumers read: the
// concatenation of the text parts' texts, in order, with nothing between
// them. The texts are joined as raw JSON string bodies, never decoded.
//
// Lossless when every part is text. Lossy otherwise: binary and media parts
// (and parts of a type nobody knows) have no place in a string and are
// dropped, each type named in a warning. A message with a part a 1.0 reader
// finds malformed (not an object, no string type, a text part whose text is
// not a string, a media part without a well-formed source: see
// rules.MalformedPart) is left untouched for the consumer to report:
// flattening it, which drops or unwraps the bad part, would repair it.
//
// Reference consumer: 0.0.37–0.0.40 accept only string content and fail the
// whole run on an array (legacy-profiles §4(e)). The flattening is the one
// the 1.0 client's BackwardCompatibility_0_0_39 applies to its input
// (protocol-1.0 §2.3), which the input direction mirrors (input_downgrade.go).
// RUN_STARTED.input is not concerned: these consumers strip it unread.
var userParts = &Step{
	Name:        "flatten-content-parts",
	Description: "array message content in snapshots becomes the concatenated text of its text parts; other parts are dropped",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 41},
	Lossy:       true,
	Types:       []string{"MESSAGES_SNAPSHOT"},
	NewEvent:    func() EventStep { return &userPartsRun{} },
}

const partsUpgrade = "a consumer that reads content parts (AG-UI 0.0.41 or newer)"

type userPartsRun struct {
	rewriter
	lost []string
}

func (u *userPartsRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	msgs, shape := messagesOf(ev, "MESSAGES_SNAPSHOT")
	EachElement(msgs, func(_ int, m gjson.Result) {
		u.lost = flattenContent(r, &u.ed, m, shape, "consumers before 0.0.41 read message content as a string only", partsUpgrade, u.lost)
	})
	u.emit(ev, emit)
}

// flattenContent records in ed the flattening of message m's array content
// (m read from the edited document). It does nothing to string content, to
// an absent one, or to content with a malformed part. Every dropped part is
// reported as lost on shape.content.<type>, with why and upgrade. lost is
// scratch, returned for reuse.
func flattenContent(r *Run, ed *Edits, m gjson.Result, shape, why, upgrade string, lost []string) []string {
	lost, ok := flattenParts(ed, Sub(m, "content"), lost[:0])
	if !ok {
		return lost
	}
	r.Translated(shape + ".content (parts)")
	for _, p := range lost {
		r.Lost(shape+".content."+p, why, upgrade)
	}
	return lost
}
