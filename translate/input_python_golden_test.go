package translate_test

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// pyGoldenTargets are the Python releases every input archive is
// translated for: the first of each row of rules.PyRules and
// negotiate.PyProfiles that changes the input, and the newest.
var pyGoldenTargets = []string{"0.1.4", "0.1.8", "0.1.9", "0.1.10", "0.1.11", "0.1.14", "0.1.15", "0.1.19", "0.1.20", "0.1.22", "1.0.0"}

// TestGoldenInputPython translates the RunAgentInput of each archive under
// testdata/golden-input for a producer on each Python release, and compares
// with the py<release>.json and warnings.py<release> sections (-update
// rewrites them). Whatever the goldens say, it checks the input direction's
// properties, and that the release's models take what comes out unless the
// consumer sent a malformed value.
func TestGoldenInputPython(t *testing.T) {
	runArchives(t, "golden-input", "input.json", func(t *testing.T, a *archive, input string) {
		consumer := consumerOf(t, *a, []byte(input))
		consumerMalformed := rules.JudgeInput(consumer, []byte(input)).Verdict == rules.Malformed
		for _, rel := range pyGoldenTargets {
			py, _, err := negotiate.ParsePyRelease("py" + rel)
			if err != nil {
				t.Fatal(err)
			}
			plan := negotiate.DecidePythonInput(consumer, py)
			obs := &collector{}
			out, run := translate.TranslateInput(plan, []byte(input), obs)
			run.Finish()
			checkInputProperties(t, "py"+rel, plan, []byte(input), out)
			a.compare(t, "py"+rel, "py"+rel+".json", out, obs.lines)
			if consumerMalformed {
				continue
			}
			j, _ := rules.JudgePythonInput(py, out)
			for _, f := range j.Findings {
				if f.Verdict == rules.Malformed || (f.Verdict == rules.Unrecognised && f.Fatal) {
					t.Errorf("py%s: %+v left in what the producer gets", rel, f)
				}
			}
		}
	})
}
