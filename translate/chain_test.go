package translate

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// Shape is the events' gate: only a valid event reaches a step; one that
// is not JSON, nested too deep or names a member twice is left to the
// caller, and nothing is emitted for it.
func TestShapeShapesOnlyValidEvents(t *testing.T) {
	var out []string
	run := NewRun(Events, negotiate.Current, negotiate.MustParse("0.0.47"), nil)
	cr := EventChain(run.To, []*Step{textName}).Start(run, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, string(ev)) })
	for _, c := range []struct {
		ev   string
		want Verdict
	}{
		{`{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada"}`, Shaped},
		{`{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada"`, NotJSON},
		{`{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada","x":` + strings.Repeat("[", rules.MaxNesting+1) + strings.Repeat("]", rules.MaxNesting+1) + `}`, NotJSON},
		{`{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada","name":"Bea"}`, RepeatedMember},
	} {
		out = nil
		ev := []byte(c.ev)
		if got := cr.Shape(ev, rules.PeekType(ev)); got != c.want {
			t.Errorf("%.80s: verdict %d, want %d", c.ev, got, c.want)
		}
		if c.want == Shaped && strings.Join(out, "") != `{"type":"TEXT_MESSAGE_START","messageId":"m"}` {
			t.Errorf("shaped: %q", out)
		}
		if c.want != Shaped && out != nil {
			t.Errorf("%.80s: emitted %d events for an event that is not valid", c.ev, len(out))
		}
	}
}
