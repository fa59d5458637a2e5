package translate

import (
	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// textName strips, for consumers older than 0.0.48, the `name` (the
// speaker's name) of TEXT_MESSAGE_START and TEXT_MESSAGE_CHUNK.
//
// Lossy: the name is what a reader would see beside the message, and these
// consumers have no place for it; a warning names it. Only a string name is
// this step's: a name of any other value is malformed for the producer's
// version and, being a member these consumers do not know, is ignored by
// them either way (0.0.43+ keep unknown top-level keys, older ones strip
// them), so it passes on untouched rather than being repaired away.
//
// Reference consumer: 0.0.48 added name?: string; earlier clients strip it
// (≤0.0.42) or keep it unread (0.0.43–0.0.47), so the loss happens whether or
// not the relay removes it; the relay removes it so the warning is said once.
var textName = &Step{
	Name:        "strip-text-name",
	Description: "TEXT_MESSAGE_START/CHUNK name is removed for consumers that predate it",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 48},
	Lossy:       true,
	Types:       []string{"TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK"},
	NewEvent:    func() EventStep { return &textNameRun{} },
}

type textNameRun struct{ rewriter }

func (t *textNameRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if Get(ev, "name").Type != gjson.String {
		emit(ev)
		return
	}
	w := &t.rewriter
	w.items = Items(Root(ev), w.items[:0])
	w.ed.DeleteItems(w.items, func(i int) bool {
		it := w.items[i]
		return it.Key.Str == "name" && it.Value.Type == gjson.String
	})
	shape := "TEXT_MESSAGE_START.name"
	if string(r.EventType()) == "TEXT_MESSAGE_CHUNK" {
		shape = "TEXT_MESSAGE_CHUNK.name"
	}
	r.Lost(shape, "consumers before 0.0.48 have no speaker name on text messages",
		"a consumer that reads text-message names (AG-UI 0.0.48 or newer)")
	w.emit(ev, emit)
}
