package negotiate

import (
	"fmt"
	"strconv"
	"strings"
)

// PyRelease is a release of the Python SDK, the PyPI package ag-ui-protocol
// (0.1.4 to 0.1.22, then 1.0.0), on which pydantic-ai, LangGraph
// (ag-ui-langgraph), CrewAI, Google ADK, Agno, LlamaIndex and most other
// Python agents are built. Its numbers are its own: they name no protocol
// version and no TypeScript release. PyProfileOf maps a release onto the
// TypeScript releases whose shapes it matches.
type PyRelease struct {
	Major, Minor, Patch int
}

// IsZero reports whether r names no release.
func (r PyRelease) IsZero() bool { return r == PyRelease{} }

// String is the release number, "0.1.19".
func (r PyRelease) String() string {
	return strconv.Itoa(r.Major) + "." + strconv.Itoa(r.Minor) + "." + strconv.Itoa(r.Patch)
}

// Name is the release as a pin names it, "ag-ui-protocol@0.1.19".
func (r PyRelease) Name() string { return pyPackage + "@" + r.String() }

// Less reports whether r is older than s.
func (r PyRelease) Less(s PyRelease) bool {
	return Version(r).Less(Version(s))
}

const pyPackage = "ag-ui-protocol"

// ParsePyRelease reads a Python release as --producer-version takes it:
// "ag-ui-protocol@0.1.19", or "py0.1.19" for short. named is false when s is
// neither form (it is then a protocol version or a TypeScript release, for
// Parse); err is set when s is one of the forms but names no release the
// relay knows.
func ParsePyRelease(s string) (r PyRelease, named bool, err error) {
	num, ok := strings.CutPrefix(s, pyPackage+"@")
	if !ok {
		num, ok = strings.CutPrefix(s, "py")
	}
	if !ok {
		return PyRelease{}, false, nil
	}
	parts := strings.Split(num, ".")
	if len(parts) != 3 {
		return PyRelease{}, true, fmt.Errorf("%q: want a release of %s such as %s@0.1.19 or py0.1.19", s, pyPackage, pyPackage)
	}
	var n [3]int
	for i, p := range parts {
		v, perr := strconv.Atoi(p)
		if perr != nil || v < 0 || len(p) > 9 || p != strconv.Itoa(v) {
			return PyRelease{}, true, fmt.Errorf("%q: want a release of %s such as %s@0.1.19 or py0.1.19", s, pyPackage, pyPackage)
		}
		n[i] = v
	}
	r = PyRelease{n[0], n[1], n[2]}
	if _, known := PyProfileOf(r); !known {
		return r, true, fmt.Errorf("%s is not a release the relay knows (%s; see agui-relay versions)", r.Name(), KnownPyReleases())
	}
	return r, true, nil
}

// KnownPyReleases spells the Python releases the relay knows as a range:
// "ag-ui-protocol@0.1.4 to 1.0.0".
func KnownPyReleases() string {
	return PyProfiles[0].Release.Name() + " to " + PyProfiles[len(PyProfiles)-1].Release.String()
}

// PyProfile is what one Python release speaks, in the TypeScript terms the
// relay reasons in.
type PyProfile struct {
	Release PyRelease
	// Source is where the facts were read: the release's commit in
	// ag-ui-protocol/ag-ui (sdks/python, or python-sdk before the move of
	// 2025-10-14), or, for a release after the stored history, what
	// corroborates it.
	Source string
	// Events is the TypeScript client release whose event shapes the
	// release's models match: what a stream of this producer is judged and
	// translated as.
	Events Version
	// Input is the @ag-ui/core release whose RunAgentInput the release's
	// models read, before the rules of its own (rules.PythonInput: forbidden
	// extra keys, members it requires that TypeScript does not, hard unions).
	Input Version
	// Adds is what the release added, for agui-relay versions.
	Adds string
}

// PyProfiles lists every release of ag-ui-protocol, oldest first, read from
// sdks/python/ag_ui/core/{types,events}.py and ag_ui/encoder/encoder.py at
// each version bump of ag-ui-protocol/ag-ui, the models run under pydantic 2.
// Every release up to 0.1.20 writes events with exclude_none (see
// rules.PythonInput on what that drops).
var PyProfiles = []PyProfile{
	{PyRelease{0, 1, 4}, "10158692a (2025-05-14)", Version{Patch: 27}, Version{Patch: 39}, "16 base event types; five roles, string content; extra=\"forbid\" on every model"},
	{PyRelease{0, 1, 5}, "b3d957a7c (2025-05-20)", Version{Patch: 28}, Version{Patch: 39}, "TEXT_MESSAGE_CHUNK, TOOL_CALL_CHUNK"},
	{PyRelease{0, 1, 6}, "d0723fd58 (2025-06-26)", Version{Patch: 30}, Version{Patch: 39}, "THINKING_* (outside the Event union), TOOL_CALL_RESULT"},
	{PyRelease{0, 1, 7}, "5cc24a26c (2025-06-26)", Version{Patch: 30}, Version{Patch: 39}, "no model change"},
	{PyRelease{0, 1, 8}, "5f7d3570d (2025-07-15)", Version{Patch: 34}, Version{Patch: 39}, "RUN_FINISHED.result"},
	{PyRelease{0, 1, 9}, "511381301 (2025-09-19)", Version{Patch: 37}, Version{Patch: 39}, "text roles developer/system/user; ToolMessage.error"},
	{PyRelease{0, 1, 10}, "fc74be5f1 (2025-11-06)", Version{Patch: 41}, Version{Patch: 40}, "ACTIVITY_*, activity role, text and binary user parts, parentRunId, RUN_STARTED.input; extra=\"allow\" from here on"},
	{PyRelease{0, 1, 11}, "4102511bd (2026-02-11)", Version{Patch: 45}, Version{Patch: 45}, "REASONING_* (REASONING_MESSAGE_START.role \"assistant\"), reasoning role, encryptedValue"},
	{PyRelease{0, 1, 12}, "10f59ec56 (2026-02-19)", Version{Patch: 45}, Version{Patch: 45}, "no model change"},
	{PyRelease{0, 1, 13}, "f6ebe07b5 (2026-02-19)", Version{Patch: 45}, Version{Patch: 45}, "no model change"},
	{PyRelease{0, 1, 14}, "872665da9 (2026-03-17)", Version{Patch: 48}, Version{Patch: 45}, "REASONING_MESSAGE_START.role \"reasoning\", name on TEXT_MESSAGE_START/CHUNK, Tool.parameters optional"},
	{PyRelease{0, 1, 15}, "396243765 (2026-04-01)", Version{Patch: 49}, Version{Patch: 49}, "image/audio/video/document parts with data|url sources (binary deprecated)"},
	{PyRelease{0, 1, 16}, "606349119 (2026-04-17)", Version{Patch: 50}, Version{Patch: 49}, "empty deltas; THINKING_* in the Event union"},
	{PyRelease{0, 1, 17}, "ad3c22477 (2026-04-20)", Version{Patch: 50}, Version{Patch: 49}, "no model change"},
	{PyRelease{0, 1, 18}, "014cadc3e (2026-04-21)", Version{Patch: 50}, Version{Patch: 49}, "no model change"},
	{PyRelease{0, 1, 19}, "34b6bc2b5 (2026-06-02)", Version{Patch: 54}, Version{Patch: 54}, "RUN_FINISHED.outcome (success|interrupt), Interrupt, RunAgentInput.resume"},
	{PyRelease{0, 1, 20}, "24399fd19 (2026-08-14)", Version{Patch: 58}, Version{Patch: 54}, "usage on RUN_FINISHED/RUN_ERROR"},
	// Released after the stored history of ag-ui-protocol/ag-ui, which ends
	// on 2026-08-22 with 0.1.20 the newest release: taken from the issue,
	// not read from source.
	{PyRelease{0, 1, 21}, "not in the stored history; main after 0.1.20 has metadata (8f6158132) and omits fields without value (bd0ed7cec)", Version{Patch: 59}, Version{Patch: 59}, "metadata (unverified)"},
	{PyRelease{0, 1, 22}, "not in the stored history; subagents landed in ag-ui#2350, first released in 0.1.22 (threadplane#962)", Version{Patch: 59}, Version{Patch: 59}, "SUBAGENT_*, subagentRunId (unverified)"},
	{PyRelease{1, 0, 0}, "not in the stored history; ag-ui#2774 (AG-UI 1.0: every SDK generated from the schema)", Version{Major: 1}, Version{Major: 1}, "generated from the 1.0 schema (unverified)"},
}

// PyProfileOf returns the profile of a release, and whether the relay knows
// the release.
func PyProfileOf(r PyRelease) (PyProfile, bool) {
	for _, p := range PyProfiles {
		if p.Release == r {
			return p, true
		}
	}
	return PyProfile{}, false
}

// DecidePythonInput is DecideInput for a producer named by its Python
// release: the input is shaped for the @ag-ui/core release its models match
// (PyProfile.Input) and then for the release's own rules, so it is always
// translated (the Python models require members TypeScript consumers may
// leave out). protocolVersion is removed toward a 0.1.x release, which
// predates the field (before 0.1.10 its models refuse any unknown key).
func DecidePythonInput(consumer Version, py PyRelease) InputPlan {
	p, _ := PyProfileOf(py)
	ip := InputPlan{From: consumer, To: p.Input, Translate: true, Python: py}
	if p.Input.Legacy() {
		ip.Declare = DeclareOmit
	} else {
		ip.Declare, ip.Declared = DeclareSet, p.Input.String()
	}
	return ip
}
