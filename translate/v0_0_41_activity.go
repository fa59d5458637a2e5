package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// activityDrop removes activity from the stream for consumers older than
// 0.0.41: ACTIVITY_SNAPSHOT and ACTIVITY_DELTA events, and activity-role
// messages in MESSAGES_SNAPSHOT.
//
// Lossy: activity is what a UI renders as widgets (progress, plans, cards);
// these consumers have no activity at all, and a warning names what went.
//
// Reference consumer: 0.0.37–0.0.40 fail the whole run on an ACTIVITY_*
// event (unknown type) and on an activity message in a snapshot (unknown
// role) (legacy-profiles §4(a), §4(d)). No step is needed for the activity
// messages of RUN_STARTED.input, nor for RUN_STARTED.parentRunId/input at
// all: these consumers do not know the members and strip them silently
// (§3.5), so the relay leaves those bytes alone.
var activityDrop = &Step{
	Name:        "drop-activity",
	Description: "ACTIVITY_* events and activity messages in snapshots are dropped for consumers that predate activity",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 41},
	Lossy:       true,
	Types:       []string{"ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "MESSAGES_SNAPSHOT"},
	NewEvent:    func() EventStep { return &activityRun{} },
}

const activityUpgrade = "a consumer that renders activity (AG-UI 0.0.41 or newer)"

type activityRun struct {
	rewriter
}

var activityMark = []byte(`"activity"`)

func (a *activityRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	switch string(r.EventType()) { // constant shapes: nothing allocated per event
	case "ACTIVITY_SNAPSHOT":
		r.Lost("ACTIVITY_SNAPSHOT", "consumers before 0.0.41 have no activity events", activityUpgrade)
		return
	case "ACTIVITY_DELTA":
		r.Lost("ACTIVITY_DELTA", "consumers before 0.0.41 have no activity events", activityUpgrade)
		return
	}
	if !bytes.Contains(ev, activityMark) {
		emit(ev)
		return
	}
	msgs, shape := messagesOf(ev, "MESSAGES_SNAPSHOT")
	dropRole(r, &a.ed, &a.items, msgs, "activity", shape+".activity",
		"consumers before 0.0.41 have no activity messages", activityUpgrade)
	a.emit(ev, emit)
}

// dropRole records in ed the removal of the messages of msgs whose role is
// role, each with a warning on shape (silently counted when upgrade is "").
// items is scratch. The input direction shares it.
func dropRole(r *Run, ed *Edits, items *[]Item, msgs gjson.Result, role, shape, why, upgrade string) {
	*items = Items(msgs, (*items)[:0])
	its := *items
	ed.DeleteItems(its, func(i int) bool {
		if Sub(its[i].Value, "role").Str != role {
			return false
		}
		if upgrade != "" {
			r.Lost(shape, why, upgrade)
		} else {
			r.Translated(shape)
		}
		return true
	})
}
