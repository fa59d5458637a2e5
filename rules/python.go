package rules

import (
	"github.com/agui-relay/agui-relay/negotiate"
)

// The Python SDK's input rules: what a producer built on a release of
// ag-ui-protocol refuses in a RunAgentInput beyond what the @ag-ui/core
// release its models match refuses (negotiate.PyProfile.Input). Pydantic
// answers any of them with HTTP 422 for the whole request, so the input
// translation reshapes what it can before the producer sees it.
//
// Each rule is one row, with the commit of ag-ui-protocol/ag-ui it was read
// at (sdks/python/ag_ui/core/types.py; python-sdk/ before 2025-10-14): the
// first release the rule holds for and the first it no longer does. The
// Python SDK cannot be installed here, so this table is its behaviour.

// PyRule is one row of the Python input rules.
type PyRule struct {
	// Name says what the rule is, as warnings and agui-relay versions name
	// it.
	Name string
	// From is the first release it holds for; Until the first it no longer
	// does (zero: it still holds).
	From, Until negotiate.PyRelease
	// Source is the commit it was read at (From's, then Until's).
	Source string
	// Reshape says what the input translation does about it.
	Reshape string
	edit    func(s *schema)
}

var (
	py014  = negotiate.PyRelease{Major: 0, Minor: 1, Patch: 4}
	py019  = negotiate.PyRelease{Major: 0, Minor: 1, Patch: 9}
	py0110 = negotiate.PyRelease{Major: 0, Minor: 1, Patch: 10}
	py0114 = negotiate.PyRelease{Major: 0, Minor: 1, Patch: 14}
	py100  = negotiate.PyRelease{Major: 1}
)

// pyRules is the table. Rules for the TypeScript shapes are not repeated:
// tools and context are required by every core before 1.0, Tool.description
// by every core, and tool messages with parts, file sources, resume before
// 0.0.54 and reasoning before 0.0.45 are what every older core refuses; the
// input chain already shapes them for PyProfile.Input.
var pyRules = []PyRule{
	{"extra=\"forbid\": any unknown member, anywhere", py014, py0110,
		"10158692a (ConfiguredBaseModel extra=\"forbid\"); fc74be5f1 (extra=\"allow\")",
		"unknown members are stripped, each loss warned",
		func(s *schema) {
			for _, o := range s.objects {
				if !o.open {
					o.strict = true
				}
			}
		}},
	{"ToolMessage has no error", py014, py019,
		"10158692a (ToolMessage: id, role, content, tool_call_id); 511381301 (+ error)",
		"error is stripped, the loss warned (its forbidden extra key)",
		func(s *schema) { s.removeField("Message(tool)", "error") }},
	{"state is required (null accepted)", py014, py100,
		"10158692a (state: Any, no default); still at 24399fd19 (0.1.20); optional on main at afdedeaa9, after the stored releases",
		"an absent state is added as {}, what spec 003 says absence means",
		func(s *schema) { s.change("RunAgentInput", anyReq("state")) }},
	{"forwardedProps is required (null accepted)", py014, py100,
		"10158692a (forwarded_props: Any, no default); still at 821b8c227 (main, 2026-08-22)",
		"an absent forwardedProps is added as null; a value present is never touched",
		func(s *schema) { s.change("RunAgentInput", anyReq("forwardedProps")) }},
	{"Tool.parameters is required (null accepted)", py014, py0114,
		"10158692a (parameters: Any, no default); 872665da9 (Optional[Any] = None)",
		"an absent parameters is added as null, what 0.1.14 reads its absence as",
		func(s *schema) { s.change("Tool", anyReq("parameters")) }},
	{"discriminated unions: an unknown role, part type or source type", py014, negotiate.PyRelease{},
		"10158692a (Field(discriminator=\"role\")); part and source unions at fc74be5f1 and 396243765",
		"a message, part or source the release does not know is removed, each loss warned",
		func(s *schema) { s.unknownMemberFatal = true }},
}

// PyRules returns the Python input rules, oldest first. The slice is a copy.
func PyRules() []PyRule { return append([]PyRule(nil), pyRules...) }

// Holds reports whether the rule holds for release r.
func (p PyRule) Holds(r negotiate.PyRelease) bool {
	return !r.Less(p.From) && (p.Until.IsZero() || r.Less(p.Until))
}

// pyTables holds the input table of every known Python release.
var pyTables = buildPyTables()

func buildPyTables() map[negotiate.PyRelease]*schema {
	m := make(map[negotiate.PyRelease]*schema, len(negotiate.PyProfiles))
	for _, p := range negotiate.PyProfiles {
		s := schemaFor(coreClient(p.Input)).dup()
		s.why = p.Release.Name()
		for _, r := range pyRules {
			if r.Holds(p.Release) {
				r.edit(s)
			}
		}
		s.link()
		m[p.Release] = s
	}
	return m
}

// coreClient names the client release whose table describes the input a
// producer on @ag-ui/core v reads: client 0.0.40 pins core 0.0.39, so core
// 0.0.40's additions are client 0.0.41's (legacy-profiles.md §0).
func coreClient(v negotiate.Version) negotiate.Version {
	if v == (negotiate.Version{Patch: 40}) {
		return negotiate.Version{Patch: 41}
	}
	return v
}

// JudgePythonInput judges one RunAgentInput against what a producer built on
// Python release r reads: its core's rules and its own (pyRules). Under
// extra="forbid" every unknown member is a Fatal Unrecognised finding; an
// unknown union member always is; a member the release requires and the
// input lacks is Malformed "required". ok is false for a release the relay
// does not know.
func JudgePythonInput(r negotiate.PyRelease, in []byte) (j Judgement, ok bool) {
	s, ok := pyTables[r]
	if !ok {
		return Judgement{}, false
	}
	jd := judge{s: s}
	doc, valid := jd.document(in, "RunAgentInput")
	if !valid {
		return jd.out, true
	}
	jd.object(s.obj("RunAgentInput"), doc)
	return jd.out, true
}

// removeField removes a field of an object; it panics if there is none.
func (s *schema) removeField(name, fieldName string) {
	o := s.obj(name)
	i := o.index(fieldName)
	if i < 0 {
		panic("rules: " + s.version.String() + ": " + name + "." + fieldName + " does not exist")
	}
	o.fields = append(o.fields[:i:i], o.fields[i+1:]...)
}
