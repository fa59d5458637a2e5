package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// through runs events through a chain of the given steps for target, as one
// run with id "r1", and returns what came out and the run's warnings.
func through(t *testing.T, target string, steps []*Step, events ...string) (out []string, warns []Warning) {
	t.Helper()
	return throughRun(t, NewRun(Events, negotiate.Version{}, negotiate.MustParse(target), nil), steps, events...)
}

func throughRun(t *testing.T, r *Run, steps []*Step, events ...string) (out []string, warns []Warning) {
	t.Helper()
	if r.RunID == "" {
		r.RunID = "r1"
	}
	cr := EventChain(r.To, steps).Start(r, negotiate.Plan{}, func(ev, typ []byte) {
		if !gjson.ValidBytes(ev) {
			t.Errorf("step emitted invalid JSON: %s", ev)
		}
		if want := rules.PeekType(ev); string(typ) != string(want) {
			t.Errorf("the chain gave %s the type %q, want %q", ev, typ, want)
		}
		out = append(out, string(ev))
	})
	for _, ev := range events {
		if !gjson.Valid(ev) {
			t.Fatalf("test input is not JSON: %s", ev)
		}
		cr.Push([]byte(ev))
	}
	return out, append([]Warning(nil), r.Warnings()...)
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func shapes(ws []Warning) string {
	var b []string
	for _, w := range ws {
		b = append(b, w.Shape+"×"+strings.Repeat("I", w.Count))
	}
	return strings.Join(b, ",")
}

func negotiate0() negotiate.Version { return negotiate.Version{Patch: 45} }

// claims asserts a step's lossy/lossless claim: Lossy says lossy, and what
// the step did says the same. A lossless step warns on nothing it rewrote
// (warns holds the warnings of a run it changed); a lossy one warned, naming
// each shape in lost, when it dropped or degraded content.
func claims(t *testing.T, s *Step, lossy bool, warns []Warning, lost ...string) {
	t.Helper()
	if s.Lossy != lossy {
		t.Errorf("%s: Lossy %v, want %v", s.Name, s.Lossy, lossy)
	}
	if !lossy {
		if len(warns) != 0 {
			t.Errorf("%s is lossless and warned: %s", s.Name, shapes(warns))
		}
		return
	}
	if len(warns) == 0 {
		t.Errorf("%s is lossy and lost content without a warning", s.Name)
	}
	for _, shape := range lost {
		if !strings.Contains(","+shapes(warns), ","+shape+"×") {
			t.Errorf("%s: no warning names %s (warnings %s)", s.Name, shape, shapes(warns))
		}
	}
	for _, w := range warns {
		if w.Why == "" || w.Upgrade == "" || w.Step != s.Name {
			t.Errorf("%s: warning %q does not name its step, what was lost and what to upgrade: %+v", s.Name, w.Shape, w)
		}
	}
}
