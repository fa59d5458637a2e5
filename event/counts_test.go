package event

import (
	"sort"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// The event type labels are exactly the event types of 1.0 and the five
// THINKING_* types, each indexed at its place, and other types fall into
// "other".
func TestEventLabels(t *testing.T) {
	want := rules.EventTypes(negotiate.Version{Major: 1})
	for _, typ := range rules.EventTypes(negotiate.Version{Patch: 40}) {
		if strings.HasPrefix(typ, "THINKING_") {
			want = append(want, typ)
		}
	}
	var got []string
	for i := range numKnownEventTypes {
		got = append(got, Label(i))
		if eventIndex([]byte(Label(i))) != i {
			t.Errorf("%s: index %d, want %d", Label(i), eventIndex([]byte(Label(i))), i)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("labels\n%v\nwant\n%v", got, want)
	}
	for typ, i := range map[string]int{"FUTURE": evOther, "run_started": evOther, "": evInvalid} {
		if eventIndex([]byte(typ)) != i {
			t.Errorf("%q: %d, want %d", typ, eventIndex([]byte(typ)), i)
		}
	}
	if eventIndex(nil) != evInvalid || Label(evOther) != "other" || Label(evInvalid) != "invalid" || Label(evComment) != "comment" {
		t.Error("the extra labels")
	}
}
