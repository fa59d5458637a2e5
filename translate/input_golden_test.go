package translate_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// inputGoldenTargets are the producer versions every input archive is
// translated for: 1.0 and each core boundary of the input direction, with
// the release just before it.
var inputGoldenTargets = []string{"1.0", "0.0.59", "0.0.58", "0.0.54", "0.0.53", "0.0.49", "0.0.48", "0.0.45", "0.0.44", "0.0.40", "0.0.39"}

// pyGoldenTargets are the Python releases every input archive is
// translated for too: the first of each row of rules.PyRules and
// negotiate.PyProfiles that changes the input, and the newest.
var pyGoldenTargets = []string{"0.1.4", "0.1.8", "0.1.9", "0.1.10", "0.1.11", "0.1.14", "0.1.15", "0.1.19", "0.1.20", "0.1.22", "1.0.0"}

// TestGoldenInput translates the RunAgentInput of each archive under
// testdata/golden-input (section input.json; option "from: V" names the
// consumer's version, else the relay's default reading decides: its
// protocolVersion declaration, or undeclared the newest release before the
// field) for
// every target, and for a producer on each Python release of
// pyGoldenTargets, and compares with the <target>.json and
// warnings.<target> sections (py<release>.json for a Python release;
// -update rewrites them). Whatever the goldens say, it checks the input
// direction's properties and, for a Python release, that its models take
// what comes out unless the consumer sent a malformed value.
func TestGoldenInput(t *testing.T) {
	runArchives(t, "golden-input", "input.json", func(t *testing.T, a *archive, input string) {
		consumer := consumerOf(t, *a, []byte(input))
		var plans []negotiate.InputPlan
		var names []string
		for _, target := range inputGoldenTargets {
			plans, names = append(plans, negotiate.DecideInput(consumer, negotiate.MustParse(target))), append(names, target)
		}
		for _, rel := range pyGoldenTargets {
			py, _, err := negotiate.ParsePyRelease("py" + rel)
			if err != nil {
				t.Fatal(err)
			}
			plans, names = append(plans, negotiate.DecidePythonInput(consumer, py)), append(names, "py"+rel)
		}
		consumerMalformed := rules.JudgeInput(consumer, []byte(input)).Verdict == rules.Malformed
		for i, plan := range plans {
			target := names[i]
			obs := &collector{}
			out, run := translate.TranslateInput(plan, []byte(input), obs)
			run.Finish()
			checkInputProperties(t, target, plan, []byte(input), out)
			a.compare(t, target, target+".json", out, obs.lines)
			if plan.Python.IsZero() || consumerMalformed {
				continue
			}
			j, _ := rules.JudgePythonInput(plan.Python, out)
			for _, f := range j.Findings {
				if f.Verdict == rules.Malformed || (f.Verdict == rules.Unrecognised && f.Fatal) {
					t.Errorf("%s: %+v left in what the producer gets", target, f)
				}
			}
		}
	})
}

func consumerOf(t *testing.T, a archive, input []byte) negotiate.Version {
	t.Helper()
	if f := a.option("from"); f != "" {
		return negotiate.MustParse(f)
	}
	var peer negotiate.Peer
	if pv := gjson.GetBytes(input, "protocolVersion"); pv.Exists() {
		peer.HasDeclared, peer.Declared = true, pv.String()
	}
	v, _, _, err := negotiate.ConsumerVersion(peer)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkInputProperties asserts what every input translation owes: valid
// JSON; forwardedProps byte for byte (or still absent); message ids kept, in
// order (messages may only go); the version declared as planned; the input
// untouched when untranslated; and idempotence.
func checkInputProperties(t *testing.T, target string, plan negotiate.InputPlan, in, out []byte) {
	t.Helper()
	if !gjson.ValidBytes(out) {
		t.Fatalf("%s: invalid JSON out: %s", target, out)
	}
	if !plan.Translate {
		// Untranslated input is the same bytes, but for its activity
		// messages, which never reach the producer.
		stripped, _ := translate.TranslateInputWith([]*translate.Step{}, negotiate.InputPlan{}, in, nil)
		if string(out) != string(stripped) {
			t.Errorf("%s: untranslated input changed beyond its activity messages", target)
		}
	}
	fin, fout := gjson.GetBytes(in, "forwardedProps"), gjson.GetBytes(out, "forwardedProps")
	if fin.Exists() != fout.Exists() || fin.Raw != fout.Raw {
		t.Errorf("%s: forwardedProps %s became %s", target, fin.Raw, fout.Raw)
	}
	var ids []string
	gjson.GetBytes(in, "messages.#.id").ForEach(func(_, v gjson.Result) bool { ids = append(ids, v.Raw); return true })
	i := 0
	gjson.GetBytes(out, "messages.#.id").ForEach(func(_, v gjson.Result) bool {
		for i < len(ids) && ids[i] != v.Raw {
			i++
		}
		if i == len(ids) {
			t.Errorf("%s: message id %s invented or reordered", target, v.Raw)
			return false
		}
		i++
		return true
	})
	pv := gjson.GetBytes(out, "protocolVersion")
	switch plan.Declare {
	case negotiate.DeclareSet:
		if pv.Str != plan.Declared {
			t.Errorf("%s: protocolVersion %s, want %s", target, pv.Raw, plan.Declared)
		}
	case negotiate.DeclareOmit:
		if pv.Exists() {
			t.Errorf("%s: protocolVersion %s toward a producer that predates it", target, pv.Raw)
		}
	}
	again, _ := translate.TranslateInput(plan, out, nil)
	if string(again) != string(out) {
		t.Errorf("%s: not idempotent:\n%s\n%s", target, out, again)
	}
}
