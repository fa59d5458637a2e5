package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// nullMeansAbsent removes, for 1.0 consumers, the nulls that 0.0.x producers
// sent to mean "absent" and that 1.0's schema rejects: rawEvent:null on any
// event; result:null on RUN_FINISHED and SUBAGENT_FINISHED;
// parentMessageId:null on TOOL_CALL_START and TOOL_CALL_CHUNK;
// RUN_FINISHED.outcome:null; media-part metadata:null in MESSAGES_SNAPSHOT
// and RUN_STARTED.input messages; and in RUN_STARTED.input forwardedProps,
// tools[].parameters and resume[].payload null.
//
// Lossless and silent: each of these nulls meant absent in the version that
// allowed it. Every other null is malformed and passes on untouched (a
// translation never repairs).
//
// Reference consumer: the 1.0 client's CompatibilityBoundary converts
// exactly this list (protocol-1.0 §2.11), warning each time; the relay is
// silent because nothing is lost.
var nullMeansAbsent = &Step{
	Name:        "null-means-absent",
	Description: "nulls that legacy producers sent for absent optional fields are removed (the 1.0 compatibility-boundary list)",
	Kind:        Upgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Types:       nil, // rawEvent:null may be on any event; "null" in the bytes filters first
	NewEvent:    func() EventStep { return &nullRun{} },
}

type nullRun struct {
	rewriter
	leaf []Item
}

var nullLit = []byte("null")

// Wants: only an event with a null in it can carry a retired null. Every
// event of the run is searched, after each step that rewrote it: by its u,
// rarer in text than n or l.
func (n *nullRun) Wants(_ *Run, _, ev []byte) bool { return indexRare(ev, "null", 1) >= 0 }

func (n *nullRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := string(r.EventType())
	w := &n.rewriter
	w.items = Items(Root(ev), w.items[:0])
	w.ed.DeleteItems(w.items, func(i int) bool {
		it := w.items[i]
		if it.Value.Type != gjson.Null {
			return false
		}
		// Shapes are named as the deprecation registry names them.
		shape := ""
		switch it.Key.Str {
		case "rawEvent":
			shape = "rawEvent:null"
		case "result":
			if typ == "RUN_FINISHED" || typ == "SUBAGENT_FINISHED" {
				shape = typ + ".result:null"
			}
		case "parentMessageId":
			if typ == "TOOL_CALL_START" || typ == "TOOL_CALL_CHUNK" {
				shape = typ + ".parentMessageId:null"
			}
		case "outcome":
			if typ == "RUN_FINISHED" {
				shape = "RUN_FINISHED.outcome:null"
			}
		}
		if shape != "" {
			r.Translated(shape)
		}
		return shape != ""
	})
	if typ == "MESSAGES_SNAPSHOT" || typ == "RUN_STARTED" {
		msgs, _ := messagesOf(ev, typ)
		EachElement(msgs, func(_ int, m gjson.Result) {
			EachElement(Sub(m, "content"), func(_ int, p gjson.Result) {
				switch Sub(p, "type").Str {
				case "image", "audio", "video", "document":
					n.dropNull(r, p, "metadata", "media-part metadata:null")
				}
			})
		})
	}
	if typ == "RUN_STARTED" {
		in := Get(ev, "input")
		n.dropNull(r, in, "forwardedProps", "RUN_STARTED.input.forwardedProps:null")
		EachElement(Sub(in, "tools"), func(_ int, t gjson.Result) {
			n.dropNull(r, t, "parameters", "RUN_STARTED.input.tools[].parameters:null")
		})
		EachElement(Sub(in, "resume"), func(_ int, e gjson.Result) {
			n.dropNull(r, e, "payload", "RUN_STARTED.input.resume[].payload:null")
		})
	}
	w.emit(ev, emit)
}

// dropNull records the removal of obj's members named key whose value is
// null. obj is read from the event (document offsets).
func (n *nullRun) dropNull(r *Run, obj gjson.Result, key, shape string) {
	n.leaf = dropNullMember(r, &n.ed, n.leaf, obj, key, shape)
}

// dropNullMember records in ed the removal of obj's members named key whose
// value is null, each counted as translated on shape. obj is read from the
// edited document; items is scratch, returned for reuse.
func dropNullMember(r *Run, ed *Edits, items []Item, obj gjson.Result, key, shape string) []Item {
	if !obj.IsObject() || !strings.Contains(obj.Raw, "null") {
		return items
	}
	items = Items(obj, items[:0])
	ed.DeleteItems(items, func(i int) bool {
		it := items[i]
		if it.Key.Str == key && it.Value.Type == gjson.Null {
			r.Translated(shape)
			return true
		}
		return false
	})
	return items
}
