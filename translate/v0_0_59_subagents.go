package translate

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// subagents downgrades subagents (new in 0.0.59) for older consumers:
// SUBAGENT_STARTED, SUBAGENT_FINISHED and SUBAGENT_ERROR are dropped, and
// subagentRunId is removed from every event, from the messages of
// MESSAGES_SNAPSHOT and RUN_STARTED.input and from RUN_FINISHED interrupts.
//
// Lossy for the lifecycle events (a subagent's name, description, result,
// error and suspension are what a reader would have seen): one warning per
// event type. Removing subagentRunId is lossless and silent, as the
// versioning draft says: the events still arrive and flatten into one
// thread. Older consumers fail the whole run on an unknown event type, and
// 0.0.54–0.0.58 on an unknown member of an interrupt's strict outcome.
//
// Reference consumer: the 1.0 client's BackwardCompatibility_0_0_57 shim
// does exactly this (warning on the dropped events, silent on the tags).
var subagents = &Step{
	Name:        "subagents",
	Description: "SUBAGENT_* events are dropped and subagentRunId tags removed for consumers without subagents",
	Kind:        Downgrade,
	Direction:   Events,
	Since:       negotiate.Version{Patch: 59},
	Lossy:       true,
	Types:       nil, // a subagentRunId may be on any event; the bytes are filtered first
	NewEvent:    func() EventStep { return &subagentsRun{} },
}

var subagentEvent = []byte("SUBAGENT_")

// subagentsRun also keeps 1.0's chunk lanes apart once the tags that name
// them are gone: an id-less continuation a consumer without lanes would
// attach to another lane's stream is given the id of the stream 1.0
// attaches it to, an id the producer sent (reshaping, counted, silent; see
// chunkLanes). The BackwardCompatibility_0_0_57 shim does not.
type subagentsRun struct {
	rewriter
	inner []Item
	lanes chunkLanes
	// name is where tagged found the tag's name in the event nameIn
	// identifies, for Apply to read again.
	name   int
	nameIn handed
}

// Wants: SUBAGENT_* events, events that carry a subagentRunId (tagged), and
// what the chunk lanes need to see (see chunkLanes.wants).
// An event without the tag's R, a text delta mostly, costs one vectorised
// search here, not tagged's calls.
func (s *subagentsRun) Wants(r *Run, typ, ev []byte) bool {
	if bytes.HasPrefix(typ, subagentEvent) || (bytes.IndexByte(ev, 'R') >= 0 && s.tagged(r, typ, ev)) {
		return true
	}
	return !s.lanes.ignores(typ) && s.lanes.wants(typ, ev)
}

// tagged reports whether ev may carry a subagentRunId the step removes: the
// name is in its bytes (searched by its R, which text hardly holds) and,
// but for the events whose messages or interrupts carry tags too, as a
// top-level member (a key with an escape may be one).
func (s *subagentsRun) tagged(r *Run, typ, ev []byte) bool {
	i := indexRare(ev, "subagentRunId", 8)
	if i < 0 {
		return false
	}
	s.name, s.nameIn = i, r.handing(ev)
	if nestsTags(typ) {
		return true
	}
	ms, ok := r.members(ev)
	if !ok {
		return true
	}
	for i := range ms {
		if ms[i].escaped || ms[i].is(ev, "subagentRunId") {
			return true
		}
	}
	return false
}

// nestsTags reports whether events of type typ carry tags inside them too:
// on their messages (MESSAGES_SNAPSHOT, RUN_STARTED.input) or interrupts
// (RUN_FINISHED).
func nestsTags(typ []byte) bool {
	switch string(typ) {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED":
		return true
	}
	return false
}

func (s *subagentsRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	typ := r.EventType()
	if bytes.HasPrefix(typ, subagentEvent) {
		switch t := string(typ); t {
		case "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
			if t != "SUBAGENT_STARTED" {
				if lane := Get(ev, "subagentRunId"); lane.Type == gjson.String {
					s.lanes.closeLane(lane.Str)
				}
			}
			r.Lost(t, "@ag-ui/client "+r.To.String()+" predates subagents and fails the whole run on "+t+"; the subagent's own events still arrive, flattened into the run",
				"@ag-ui/client 0.0.59 or newer")
			return
		}
	}
	kind := chunkKindOf(typ)
	name := s.name
	if s.nameIn != r.handing(ev) {
		name = indexRare(ev, "subagentRunId", 8)
	}
	if name < 0 {
		if kind != 0 {
			id := Get(ev, kind.idKey())
			s.chunk(r, Root(ev), kind, "", false, id, id.Exists())
		} else {
			s.lanes.event(typ, "")
		}
		s.emit(ev, emit)
		return
	}
	if kind == 0 && s.dropTopTags(r, typ, ev) {
		s.emit(ev, emit)
		return
	}
	root := Root(ev)
	lane, tagged := "", false
	var id gjson.Result
	hasID := false
	if root.IsObject() {
		s.inner = Items(root, s.inner[:0])
		for _, it := range s.inner {
			switch {
			case it.Key.Str == "subagentRunId" && !tagged:
				// The first member is what gjson (and so the chain) reads.
				tagged = it.Value.Type == gjson.String
				lane = it.Value.Str
			case kind != 0 && !hasID && it.Key.Str == kind.idKey():
				id, hasID = it.Value, true
			}
		}
		s.dropTags(r, s.inner, "subagentRunId")
	}
	if kind != 0 {
		s.chunk(r, root, kind, lane, tagged, id, hasID)
	} else {
		s.lanes.event(typ, lane)
	}
	switch string(typ) {
	case "MESSAGES_SNAPSHOT", "RUN_STARTED":
		msgs, shape := messagesOf(ev, string(typ))
		EachElement(msgs, func(_ int, m gjson.Result) { s.dropTag(r, m, shape+".subagentRunId") })
	case "RUN_FINISHED":
		EachElement(Get(ev, "outcome.interrupts"), func(_ int, in gjson.Result) {
			s.dropTag(r, in, "RUN_FINISHED.outcome.interrupts.subagentRunId")
		})
	}
	s.emit(ev, emit)
}

// dropTopTags is Apply for a tagged event that is no chunk and carries no
// tags but its own (not a MESSAGES_SNAPSHOT, RUN_STARTED or RUN_FINISHED),
// the streaming path: the tags are found among the event's members, which
// the chain has read (members), and removed in the one copy of the rewrite.
// It reports false, having done nothing, for an event whose members it
// cannot read so, or whose tag or keys hold escapes: Apply reads it then.
func (s *subagentsRun) dropTopTags(r *Run, typ, ev []byte) bool {
	if nestsTags(typ) {
		return false
	}
	ms, ok := r.members(ev)
	if !ok {
		return false
	}
	lane, tagged := "", false
	for i := range ms {
		m := &ms[i]
		if m.escaped {
			return false
		}
		if !tagged && m.is(ev, "subagentRunId") {
			// The first member is what gjson (and so the chain) reads; a
			// tag that is no string names no lane.
			if v := ev[m.val:m.end]; v[0] == '"' {
				if bytes.IndexByte(v, '\\') >= 0 {
					return false
				}
				lane, tagged = view(v[1:len(v)-1]), true
			}
		}
	}
	s.ed.deleteMembers(ev, ms, "subagentRunId", r.Translated)
	s.lanes.event(typ, lane) // lane is borrowed from ev: compared, never kept
	return true
}

// chunk tracks a chunk of the lane its tag names and, when the chunk is an
// id-less continuation an old consumer would read differently once the tag
// is gone, makes the id of the stream it continues explicit.
func (s *subagentsRun) chunk(r *Run, root gjson.Result, kind chunkKind, lane string, tagged bool, id gjson.Result, hasID bool) {
	if hasID {
		if id.Type == gjson.String && id.Str != "" {
			s.lanes.open(lane, kind, id)
		}
		return // a null or malformed id is the consumer's to judge
	}
	// A lane whose stream is unknown passes on as it is; so does a
	// continuation of the old consumer's one open stream.
	target, rewrite := s.lanes.target(lane, tagged, kind)
	if !rewrite {
		return
	}
	at := root.Index + len(root.Raw) - 1 // the closing brace
	mark := s.ed.Begin()
	s.ed.AppendString(`,"`)
	s.ed.AppendString(kind.idKey())
	s.ed.AppendString(`":`)
	s.ed.AppendString(target.raw)
	s.ed.Commit(at, at, mark)
	r.Translated(kind.shape())
	s.lanes.old, s.lanes.oldOpen = *target, true
}

// dropTag records the removal of obj's subagentRunId members.
func (s *subagentsRun) dropTag(r *Run, obj gjson.Result, shape string) {
	if !obj.IsObject() {
		return
	}
	s.inner = Items(obj, s.inner[:0])
	s.dropTags(r, s.inner, shape)
}

// dropTags records the removal of the subagentRunId members among items,
// every member of one object.
func (s *subagentsRun) dropTags(r *Run, items []Item, shape string) {
	s.ed.DeleteItems(items, func(i int) bool {
		if items[i].Key.Str != "subagentRunId" {
			return false
		}
		r.Translated(shape)
		return true
	})
}
