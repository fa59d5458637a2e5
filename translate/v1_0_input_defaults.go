package translate

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// inputToolsContext adds "tools":[] and "context":[] to RUN_STARTED.input
// when absent, for consumers older than 1.0: 1.0 made both optional, and
// 0.0.41–0.0.59 validate RUN_STARTED.input with both required, failing the
// whole run without them (older releases strip input altogether).
//
// Lossless: an empty list is the reshaping the older schema requires, and
// what 1.0 itself defaults them to. Silent.
var inputToolsContext = &Step{
	Name:        "input-tools-context",
	Description: "RUN_STARTED.input gets the empty tools and context lists legacy schemas require",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Major: 1},
	Types:       []string{"RUN_STARTED"},
	NewEvent:    func() EventStep { return &inputDefaultsRun{} },
}

type inputDefaultsRun struct {
	rewriter
}

var emptyList = []byte("[]")

func (d *inputDefaultsRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	in := Get(ev, "input")
	if !in.IsObject() {
		emit(ev)
		return
	}
	d.items = Items(in, d.items[:0])
	nonEmpty := len(d.items) > 0
	for _, key := range [...]string{"tools", "context"} {
		if Sub(in, key).Exists() {
			continue
		}
		d.ed.AppendMember(in, nonEmpty, key, emptyList)
		nonEmpty = true
		r.Translated("RUN_STARTED.input." + key)
	}
	d.emit(ev, emit)
}
