package rules

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// retiredIn1_0 collects every retired shape the 1.0 tables point at: event
// types, union members and nulls.
func retiredIn1_0() map[string]bool {
	s := schemaFor(negotiate.Current)
	out := map[string]bool{}
	for _, shape := range s.retiredEvents {
		out[shape] = true
	}
	for _, u := range s.unions {
		for _, rm := range u.retired {
			out[rm.shape] = true
		}
	}
	for _, o := range s.objects {
		for _, f := range o.fields {
			if f.null == nullRetired || f.null == nullRetiredInEcho {
				out[f.retired] = true
			}
			if f.oldShape != "" {
				out[f.oldShape] = true
			}
			if f.absent != "" {
				out[f.absent] = true
			}
		}
	}
	return out
}

func TestDeprecationRegistryInvariants(t *testing.T) {
	reg := Deprecations()
	if !sort.SliceIsSorted(reg, func(i, k int) bool { return reg[i].Shape < reg[k].Shape }) {
		t.Error("registry is not sorted by shape")
	}
	steps := map[string]bool{StepThinkingToReasoning: true, StepBinaryToMedia: true, StepNullMeansAbsent: true, StepReasoningRole: true, StepAbsentMeansNull: true}
	s := schemaFor(negotiate.Current)
	tabled := retiredIn1_0()
	for i, d := range reg {
		if i > 0 && reg[i-1].Shape == d.Shape {
			t.Errorf("%s listed twice", d.Shape)
		}
		if d.Shape == "" || d.Replacement == "" || d.Step == "" || d.Retired.IsZero() || d.Expires.IsZero() {
			t.Errorf("%+v: every field must be set", d)
		}
		if !steps[d.Step] {
			t.Errorf("%s: unknown translation step %q", d.Shape, d.Step)
		}
		if !d.Expires.After(time.Date(2026, 9, 17, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: expires %v, before the version that retired it was published", d.Shape, d.Expires)
		}
		// Not live and retired at once: the 1.0 tables must point at the
		// entry as retired, never describe it.
		if !tabled[d.Shape] {
			t.Errorf("%s: the 1.0 tables do not treat it as retired", d.Shape)
		}
		if KnownEventType(d.Retired, []byte(d.Shape)) {
			t.Errorf("%s: retired in %s but still an event type of it", d.Shape, d.Retired)
		}
		if strings.HasPrefix(d.Shape, "THINKING_") {
			repl := strings.Fields(d.Replacement)[0]
			if !KnownEventType(d.Retired, []byte(repl)) {
				t.Errorf("%s: replacement %s is not a %s event type", d.Shape, repl, d.Retired)
			}
		}
		if d.Step == StepBinaryToMedia {
			if _, ok := s.unions["ContentPart"].members["binary"]; ok {
				t.Error("binary content part is retired but still a 1.0 member")
			}
			if _, ok := s.unions["ContentPart"].members["image"]; !ok {
				t.Error("binary content part's replacement is not a 1.0 member")
			}
		}
		if _, ok := LookupDeprecation(d.Shape); !ok {
			t.Errorf("%s: LookupDeprecation misses it", d.Shape)
		}
	}
	for shape := range tabled {
		if _, ok := LookupDeprecation(shape); !ok {
			t.Errorf("the 1.0 tables retire %q, which the registry does not list", shape)
		}
	}
	if _, ok := LookupDeprecation("TEXT_MESSAGE_START"); ok {
		t.Error("a live shape is found in the registry")
	}
}

func TestDeprecationLiveAt(t *testing.T) {
	d, ok := LookupDeprecation("THINKING_START")
	if !ok {
		t.Fatal("THINKING_START not registered")
	}
	if !d.Expires.Equal(time.Date(2027, 9, 17, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("THINKING_START expires %v, want 2027-09-17 (the reference packages' date)", d.Expires)
	}
	if !d.LiveAt(d.Expires.Add(-time.Second)) {
		t.Error("not live the second before expiry")
	}
	if d.LiveAt(d.Expires) || d.LiveAt(d.Expires.AddDate(1, 0, 0)) {
		t.Error("live at or after expiry")
	}
}
