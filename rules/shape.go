package rules

import (
	"fmt"
	"sort"

	"github.com/agui-relay/agui-relay/negotiate"
)

// This file holds the vocabulary of the shape tables: what a field's value
// may be, how a null is read, and the edit helpers the version history
// (shapes.go) is written with. The helpers panic on an inconsistent edit
// (adding what exists, changing what does not), so that a wrong history
// fails at package initialisation and in every test, never silently.

// kind is the JSON kind a described field carries.
type kind uint8

const (
	kString kind = iota + 1
	kNumber      // any JSON number (0.0.x timestamps)
	kInt         // an integer; 1.0: a safe integer, as z.int()
	kBool
	kAny    // opaque JSON: never descended into
	kRecord // an object whose members are opaque (metadata, activity content)
	kObject // a described object, ref names it
	kArray  // elem describes the items
	kUnion  // a described object picked by a discriminator, ref names the union
	// kContent is "string | elem[]", the content of user and tool messages;
	// zod reports a bad item at the content itself, not at the item.
	kContent
)

// typ describes the value of a field. Values are never mutated once built;
// versions share them.
type typ struct {
	kind kind
	ref  string // kObject: object name; kUnion: union name
	elem *typ   // kArray, kContent
	enum []string
	// nonEmpty rejects "" (delta before 0.0.50).
	nonEmpty bool
	// nonNeg rejects negative integers (token counts).
	nonNeg bool
	// safe restricts kInt to ±(2^53-1) (1.0).
	safe bool
	// pointer requires RFC 6901 JSON-pointer syntax (1.0 patch paths).
	pointer bool
	// minItems is the least number of items of a kArray.
	minItems int
}

// nullRule says how a version reads null in a field.
type nullRule uint8

const (
	// nullFatal: null is a malformed value (zod rejects it).
	nullFatal nullRule = iota
	// nullValue: null is data (opaque any-JSON positions).
	nullValue
	// nullAbsent: the version reads null as absent, silently.
	nullAbsent
	// nullRetired: null meant absent in an older version; the 1.0 reader's
	// compatibility boundary converts it (a retired shape, field.retired).
	nullRetired
	// nullRetiredInEcho is nullRetired inside RUN_STARTED.input and
	// nullFatal elsewhere (the input itself goes to the producer untouched).
	nullRetiredInEcho
)

type field struct {
	name string
	t    typ
	req  bool
	null nullRule
	// retired names the registry shape of a retired null.
	retired string
	// oldValue is a retired literal of an enum field (some producers sent
	// REASONING_MESSAGE_START.role "assistant"), oldShape its registry shape:
	// the value is a retired shape, not malformed.
	oldValue, oldShape string
	// echo marks RUN_STARTED.input: the RunAgentInput a producer echoes.
	echo bool
	// absent names the registry shape of a required member left out by
	// producers of a published SDK whose older versions described it
	// optional (1.0's CUSTOM.value, RAW.event, STATE_SNAPSHOT.snapshot,
	// which the Python SDK's encoder drops when None): its absence is a
	// retired shape, not malformed.
	absent string
}

// object is a described JSON object: an event, a message, a part...
type object struct {
	// name is the shape name findings use: "TOOL_CALL_START",
	// "Message(user)", "Interrupt".
	name   string
	fields []field
	// strict objects fail the run on an unknown key (0.0.54-0.0.59
	// outcomes); others strip or keep it.
	strict bool
	// open objects take any extra member without notice (JSON-Patch ops).
	open bool
	// oneOf lists members of which at least one must be present
	// (the legacy binary part's refine).
	oneOf []string
}

func (o *object) index(name string) int {
	for i := range o.fields {
		if o.fields[i].name == name {
			return i
		}
	}
	return -1
}

// union is a discriminated union of described objects.
type union struct {
	name string
	disc string
	// members maps a discriminator value to an object name.
	members map[string]string
	// rule names an unknown member ("unknown-role").
	rule string
	// retired maps a discriminator value to a retired member (1.0:
	// "binary" parts).
	retired map[string]retiredMember
	// objs is members linked to their objects.
	objs map[string]*object
}

// retiredMember is a union member a version no longer describes. Only a
// document with the old shape's members is the retired shape (and can be
// translated); anything else under the old name is an unknown member.
type retiredMember struct {
	shape string   // registry key
	req   []string // string members the old shape required
	oneOf []string // string members of which the translation needs one
}

// schema is everything one version reads.
type schema struct {
	version negotiate.Version
	why     string // the change that made this version, for the history
	objects map[string]*object
	unions  map[string]*union
	// events holds the event types the version reads (objects "event:"+type).
	events map[string]bool
	// eventObj and memberObj are the linked lookups judging uses; link
	// rebuilds them after the edits of a release.
	eventObj map[string]*object
	// retiredEvents maps an event type the version no longer reads to its
	// registry shape (1.0: THINKING_*).
	retiredEvents map[string]string
	// unknownEventFatal: the version fails the run on an unknown type
	// (every 0.0.x release parses with a discriminated union).
	unknownEventFatal bool
	// unknownMemberFatal: an unknown role, part type, outcome type or source
	// type fails the run (0.0.x) rather than being stripped (1.0).
	unknownMemberFatal bool
	// base is the BaseEvent fields every event type added from now on gets.
	base []field
	// keepsUnknownTopLevel: 0.0.43+ keep unknown top-level event keys
	// (passthrough); older releases strip them silently. Neither is fatal.
	keepsUnknownTopLevel bool
}

const eventPrefix = "event:"

func (s *schema) clone(v negotiate.Version, why string) *schema {
	if !s.version.Less(v) {
		panic(fmt.Sprintf("rules: version %s follows %s", v, s.version))
	}
	n := s.dup()
	n.version, n.why = v, why
	return n
}

// dup copies the schema deeply enough for edits (objects, unions, maps) to
// leave s as it was.
func (s *schema) dup() *schema {
	n := *s
	n.objects = make(map[string]*object, len(s.objects))
	for k, o := range s.objects {
		c := *o
		c.fields = append([]field(nil), o.fields...)
		n.objects[k] = &c
	}
	n.unions = make(map[string]*union, len(s.unions))
	for k, u := range s.unions {
		c := *u
		c.members = copyMap(u.members)
		c.retired = copyMap(u.retired)
		n.unions[k] = &c
	}
	n.base = append([]field(nil), s.base...)
	n.events = copyMap(s.events)
	n.retiredEvents = copyMap(s.retiredEvents)
	return &n
}

func copyMap[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// link resolves names into the lookups judging uses, once per release.
func (s *schema) link() {
	s.eventObj = make(map[string]*object, len(s.events))
	for t := range s.events {
		s.eventObj[t] = s.event(t)
	}
	for name, u := range s.unions {
		u.name = name
		u.objs = make(map[string]*object, len(u.members))
		for v, on := range u.members {
			u.objs[v] = s.obj(on)
		}
	}
	for _, o := range s.objects {
		if len(o.fields) > 64 {
			panic("rules: " + o.name + " has more than 64 fields") // judging tracks them in a uint64
		}
		for _, f := range o.fields {
			s.checkRef(o.name, f.t)
		}
	}
}

func (s *schema) checkRef(at string, t typ) {
	switch t.kind {
	case kObject:
		s.obj(t.ref)
	case kUnion:
		if _, ok := s.unions[t.ref]; !ok {
			panic("rules: " + s.version.String() + ": " + at + " names no union " + t.ref)
		}
	case kArray, kContent:
		s.checkRef(at, *t.elem)
	}
}

// obj returns the named object; it panics when there is none.
func (s *schema) obj(name string) *object {
	o, ok := s.objects[name]
	if !ok {
		panic("rules: " + s.version.String() + ": no shape " + name)
	}
	return o
}

// event returns the object of an event type.
func (s *schema) event(typ string) *object { return s.obj(eventPrefix + typ) }

// addObject adds a described object; it panics if the name is taken.
func (s *schema) addObject(name string, o object) {
	if _, ok := s.objects[name]; ok {
		panic("rules: " + s.version.String() + ": shape " + name + " already exists")
	}
	s.objects[name] = &o
}

// addEvent adds an event type with its own fields; the base fields are
// added here so that every event carries the version's BaseEvent.
func (s *schema) addEvent(typ string, fields ...field) {
	all := append([]field{{name: "type", t: typ_(kString), req: true}}, fields...)
	all = append(all, s.base...)
	s.addObject(eventPrefix+typ, object{name: typ, fields: all})
	s.events[typ] = true
}

// removeEvent retires an event type, naming its registry shape.
func (s *schema) removeEvent(typ, shape string) {
	if !s.events[typ] {
		panic("rules: " + s.version.String() + ": no event " + typ + " to retire")
	}
	delete(s.events, typ)
	delete(s.objects, eventPrefix+typ)
	s.retiredEvents[typ] = shape
}

// add adds fields to an object; it panics if one exists.
func (s *schema) add(name string, fs ...field) {
	o := s.obj(name)
	for _, f := range fs {
		if o.index(f.name) >= 0 {
			panic("rules: " + s.version.String() + ": " + name + "." + f.name + " already exists")
		}
		o.fields = append(o.fields, f)
	}
}

// change replaces fields of an object; it panics if one does not exist.
func (s *schema) change(name string, fs ...field) {
	o := s.obj(name)
	for _, f := range fs {
		i := o.index(f.name)
		if i < 0 {
			panic("rules: " + s.version.String() + ": " + name + "." + f.name + " does not exist")
		}
		o.fields[i] = f
	}
}

// edit changes one existing field in place through fn.
func (s *schema) edit(name, fieldName string, fn func(*field)) {
	o := s.obj(name)
	i := o.index(fieldName)
	if i < 0 {
		panic("rules: " + s.version.String() + ": " + name + "." + fieldName + " does not exist")
	}
	fn(&o.fields[i])
}

// eventTypes returns the version's event types, sorted.
func (s *schema) eventTypes() []string {
	ts := make([]string, 0, len(s.events))
	for t := range s.events {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// Field constructors keep the tables one line per field.

func typ_(k kind) typ { return typ{kind: k} }

func req(name string, t typ) field { return field{name: name, t: t, req: true} }
func opt(name string, t typ) field { return field{name: name, t: t} }

// anyReq and anyOpt are opaque positions where null is data.
func anyReq(name string) field { return field{name: name, t: typ_(kAny), req: true, null: nullValue} }
func anyOpt(name string) field { return field{name: name, t: typ_(kAny), null: nullValue} }

var (
	tString = typ_(kString)
	tNumber = typ_(kNumber)
	tBool   = typ_(kBool)
	tRecord = typ_(kRecord)
	tAny    = typ_(kAny)
)

func tEnum(vs ...string) typ             { return typ{kind: kString, enum: vs} }
func tObj(name string) typ               { return typ{kind: kObject, ref: name} }
func tUnion(name string) typ             { return typ{kind: kUnion, ref: name} }
func tArray(elem typ) typ                { return typ{kind: kArray, elem: &elem} }
func tContent(elem typ) typ              { return typ{kind: kContent, elem: &elem} }
func tNonEmpty() typ                     { return typ{kind: kString, nonEmpty: true} }
func tCount() typ                        { return typ{kind: kInt, nonNeg: true} }
func nullable(f field, r nullRule) field { f.null = r; return f }
