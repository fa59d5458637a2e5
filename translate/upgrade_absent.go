package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// absentMeansNull gives 1.0 consumers the opaque value an event of a legacy
// producer left out: STATE_SNAPSHOT.snapshot, RAW.event and CUSTOM.value
// become null when absent. 0.0.x read the three as z.any(), which takes an
// absent member; 1.0 requires them (null is a value there). The Python
// SDK's encoder leaves them out whenever they hold None: every release of
// ag-ui-protocol up to 0.1.20 writes model_dump_json(exclude_none=True),
// which drops required fields as readily as optional ones, so a CUSTOM
// event whose value is None reaches the wire as {"type":"CUSTOM","name":…}.
//
// Lossless and silent: null is what the producer held, and the empty value
// the newer schema requires. The registry lists the three as retired
// shapes (rules.StepAbsentMeansNull); a producer that declares 1.0 is
// judged by 1.0, untranslated.
//
// Reference consumer: the 1.0 client has no such conversion and fails the
// run (its CompatibilityBoundary converts nulls, never absences).
var absentMeansNull = &Step{
	Name:        rules.StepAbsentMeansNull,
	Description: "the snapshot, event or value a legacy producer left out of STATE_SNAPSHOT, RAW or CUSTOM becomes null",
	Kind:        Upgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Types:       []string{"STATE_SNAPSHOT", "RAW", "CUSTOM"},
	NewEvent:    func() EventStep { return &absentRun{} },
}

type absentRun struct {
	rewriter
}

// absentKey is the member each type requires.
func absentKey(typ string) string {
	switch typ {
	case "STATE_SNAPSHOT":
		return "snapshot"
	case "RAW":
		return "event"
	}
	return "value"
}

func (a *absentRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := string(r.EventType())
	key := absentKey(typ)
	root := Root(ev)
	if !root.IsObject() || Sub(root, key).Exists() {
		emit(ev)
		return
	}
	a.items = Items(root, a.items[:0])
	a.ed.AppendMember(root, len(a.items) > 0, key, nullLit)
	r.Translated(typ + "." + key + ":absent")
	a.emit(ev, emit)
}
