package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Every retired shape of the deprecation registry has a translation that
// exists: an event upgrade step of that name, running for the version that
// retired the shape.
func TestDeprecationRegistryStepsExist(t *testing.T) {
	steps := map[string]*Step{}
	for _, s := range Registry() {
		if s.Direction == Events {
			steps[s.Name] = s
		}
	}
	for _, d := range rules.Deprecations() {
		s, ok := steps[d.Step]
		if !ok {
			t.Errorf("%s: translation step %q does not exist", d.Shape, d.Step)
			continue
		}
		if s.Kind != Upgrade || !s.Applies(d.Retired) {
			t.Errorf("%s: step %s is not an upgrade running for %s", d.Shape, s.Name, d.Retired)
		}
	}
}

// The registry of steps is data with invariants: unique names per
// direction, every field a chain needs set, registered oldest change first.
func TestStepRegistryInvariants(t *testing.T) {
	seen := map[string]bool{}
	var last [2]negotiate.Version
	for _, s := range Registry() {
		key := s.Direction.String() + "/" + s.Name
		if seen[key] {
			t.Errorf("%s registered twice", key)
		}
		seen[key] = true
		if s.Python {
			// Keyed on the producer's Python release, not on a version: an
			// input step judging what the versioned steps left.
			if s.Direction != Input || !s.Late || !s.Since.IsZero() || s.Input == nil {
				t.Errorf("%s: a Python step is a Late input step with no Since", key)
			}
			continue
		}
		if s.Name == "" || s.Description == "" || s.Since.IsZero() && s.Kind == Downgrade {
			t.Errorf("%s: name, description and (for a downgrade) Since must be set", key)
		}
		switch s.Direction {
		case Events:
			if s.NewEvent == nil || s.Input != nil {
				t.Errorf("%s: an event step has NewEvent and no Input", key)
			}
		case Input:
			if s.Input == nil || s.NewEvent != nil {
				t.Errorf("%s: an input step has Input and no NewEvent", key)
			}
		}
		if s.Since.Less(last[s.Direction]) {
			t.Errorf("%s (since %s) is registered after a change of %s: keep the registry oldest first", key, s.Since, last[s.Direction])
		}
		last[s.Direction] = s.Since
	}
}

// The null upgrade names what it removed exactly as the deprecation registry
// names the retired shape, so that telemetry can say who still needs it.
func TestNullShapesAreRegistryShapes(t *testing.T) {
	var shapes []string
	obs := observerFunc(func(_ *Step, shape string) { shapes = append(shapes, shape) })
	c := EventChain(negotiate.Current, []*Step{nullMeansAbsent})
	cr := c.Start(NewRun(Events, negotiate.Version{}, negotiate.Current, obs), negotiate.Plan{}, func(_, _ []byte) {})
	for _, ev := range []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","rawEvent":null,"input":{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"},"metadata":null}]}],"forwardedProps":null,"tools":[{"name":"n","description":"d","parameters":null}],"resume":[{"interruptId":"i","status":"resolved","payload":null}]}}`,
		`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}`,
		`{"type":"TOOL_CALL_CHUNK","toolCallId":"c","parentMessageId":null}`,
		`{"type":"SUBAGENT_FINISHED","subagentRunId":"s","result":null}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null,"outcome":null}`,
	} {
		cr.Push([]byte(ev))
	}
	registry := map[string]bool{}
	for _, d := range rules.Deprecations() {
		if d.Step == nullMeansAbsent.Name {
			registry[d.Shape] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range shapes {
		if !registry[s] {
			t.Errorf("shape %q is not a registry shape", s)
		}
		seen[s] = true
	}
	for s := range registry {
		if !seen[s] {
			t.Errorf("registry shape %q was never produced", s)
		}
	}
}

type observerFunc func(step *Step, shape string)

func (f observerFunc) Translated(step *Step, shape string, _, _ negotiate.Version) { f(step, shape) }
func (f observerFunc) Warn(*Run, Warning)                                          {}
