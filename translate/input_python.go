package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// inputPython applies, toward a producer named by its Python SDK release
// (negotiate.DecidePythonInput), the rules of that release's models beyond
// those of the core its input matches (rules.PyRules). The chain before it
// has shaped the input for that core (parts flattened, media made binary,
// reasoning or resume removed, tools and context added, ...); pydantic
// refuses the whole request with 422 on anything still wrong, so:
//
//   - what the release refuses and does not know is stripped, each loss
//     warned once per shape naming it: any unknown member under
//     extra="forbid" (before 0.1.10; ToolMessage.error before 0.1.9), and,
//     in every release, a message, part or source of a kind its
//     discriminated unions do not have (the versioning draft has a producer
//     strip unrecognised input with a warning; the relay does it for one
//     that would refuse instead). Under extra="allow" unknown members stay:
//     the release takes them;
//   - a member the release requires and the input leaves out is added with
//     an empty value, silently (reshaping, spec 000): state as {}, what spec
//     003 says an absent state means; forwardedProps as null, the JSON
//     absence of a value (the Python model types it Any and takes null, and
//     1.0 Python reads an absent forwardedProps as None); Tool.parameters,
//     before 0.1.14, as null, what 0.1.14 reads its absence as. Adding
//     forwardedProps where the consumer sent none alters no value the
//     consumer sent; one it sent, null included, is never touched, and
//     nothing under it is judged;
//   - a malformed value is left for the producer to report (a translation
//     never repairs), as the other input steps leave it.
//
// The relay refuses no input for a Python producer that it would not refuse
// for its consumer: everything the Python models reject beyond that is
// reshaped here.
//
// It is a Late step, after inputUnrecognised (which leaves Python
// producers to it), in every input chain (Python): it does nothing unless
// r.Python names a release.
var inputPython = &Step{
	Name:        "python-input",
	Description: "input shaped for a Python producer's release: what its models refuse and do not know stripped, the members they require added empty",
	Kind:        Downgrade,
	Direction:   Input,
	Lossy:       true,
	Late:        true,
	Python:      true,
	Input: func(r *Run, in []byte) []byte {
		if r.Python.IsZero() {
			return in
		}
		j, ok := rules.JudgePythonInput(r.Python, in)
		if !ok || j.Verdict == rules.Accepted {
			return in
		}
		var u unrecognisedRun
		var required []string
		for _, f := range j.Findings {
			switch {
			case strings.HasPrefix(f.Pointer, "/forwardedProps/"):
				// Never judged: opaque, and never altered.
			case f.Verdict == rules.Unrecognised && f.Fatal && f.Pointer != "" && f.Pointer != "/forwardedProps":
				// What 1.0 describes but finds malformed is for the producer
				// to refuse: removing it would repair it.
				if un := droppedUnion(f.Rule); un != "" && rules.MalformedMember(negotiate.Current, un, rawBytes(Get(in, pointerPath(f.Pointer)))) {
					continue
				}
				u.drops = append(u.drops, f.Pointer)
				r.Lost(f.Shape, pyWhy(r.Python, f), pyUpgrade(r.Python, f))
			case f.Verdict == rules.Malformed && f.Rule == "required":
				required = append(required, f.Pointer)
			}
		}
		out := in
		if len(u.drops) > 0 {
			u.remove(in)
			out = applyInput(in, &u.ed)
		}
		if len(required) > 0 {
			out = inputEdit(out, func(w *rewriter, root gjson.Result) {
				for _, p := range required {
					addRequired(r, w, root, p)
				}
			})
		}
		return out
	},
}

// pyEmpty is the empty value added for each member a Python release
// requires and the input may leave out.
var pyEmpty = map[string][]byte{"state": []byte("{}"), "forwardedProps": nullLit, "parameters": nullLit}

// addRequired records the addition of the empty value of the required
// member at pointer p (/state, /forwardedProps, /tools/N/parameters); any
// other required member missing is left for the producer to report.
func addRequired(r *Run, w *rewriter, root gjson.Result, p string) {
	cut := strings.LastIndexByte(p, '/')
	parent, key := p[:cut], p[cut+1:]
	empty, ok := pyEmpty[key]
	if !ok {
		return
	}
	obj, shape := root, "RunAgentInput."+key
	switch {
	case parent == "" && key != "parameters":
	case key == "parameters" && strings.HasPrefix(parent, "/tools/") && strings.Count(parent, "/") == 2:
		obj, shape = Sub(root, pointerPath(parent)), "RunAgentInput.tools.parameters"
	default:
		return
	}
	if !obj.IsObject() {
		return
	}
	w.items = Items(obj, w.items[:0])
	w.ed.AppendMember(obj, len(w.items) > 0, key, empty)
	r.Translated(shape + "(absent)")
}

// pyWhy says why a Python release refuses what was stripped.
func pyWhy(py negotiate.PyRelease, f rules.Finding) string {
	what := "has no such " + strings.TrimPrefix(f.Rule, "unknown-")
	if f.Rule == "unknown-property" {
		what = "forbids unknown members (extra=\"forbid\")"
	}
	return py.Name() + " " + what + " and answers the whole input with 422 (" + f.Rule + " at " + f.Pointer + ")"
}

// pyUpgrade names the release that takes what was stripped: 0.1.10 for
// members extra="forbid" refused (0.1.9 for ToolMessage.error), a newer
// ag-ui-protocol for a kind of message or part its unions do not have.
func pyUpgrade(py negotiate.PyRelease, f rules.Finding) string {
	if f.Rule == "unknown-property" {
		if f.Shape == "Message(tool).error" {
			return "a producer on ag-ui-protocol 0.1.9 or newer (ToolMessage.error)"
		}
		return "a producer on ag-ui-protocol 0.1.10 or newer (extra=\"allow\")"
	}
	return "a producer on an ag-ui-protocol newer than " + py.String() + " that knows it"
}
