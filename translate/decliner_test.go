package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// gateRun declines TEXT_MESSAGE_CONTENT until an OPEN event is applied,
// whose Apply emits a content event before it opens; once open, it drops
// every content event.
type gateRun struct{ open bool }

func (g *gateRun) Wants(_ *Run, typ, _ []byte) bool {
	return string(typ) == "OPEN" || (g.open && string(typ) == "TEXT_MESSAGE_CONTENT")
}

func (g *gateRun) Declines(_ *Run, typ []byte) bool { return !g.Wants(nil, typ, nil) }

func (g *gateRun) Apply(_ *Run, ev []byte, emit func([]byte)) {
	if string(rules.PeekType(ev)) == "OPEN" {
		emit([]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"opened"}`))
		g.open = true
	}
}

// relayed hands events to cr as the relay does (Wanted, then ShapeWanted)
// and appends to out those no step wants.
func relayed(cr *ChainRun, out *[]string, events ...string) {
	for _, ev := range events {
		b := []byte(ev)
		typ := rules.PeekType(b)
		if w := cr.Wanted(typ, b); w.Any() {
			cr.ShapeWanted(w, b, typ)
		} else {
			*out = append(*out, ev)
		}
	}
}

// A step that declined a type is asked about it again once applied, even
// when the type's list was made, during its Apply, for an event it emitted:
// the chain run must not keep the list that left it out.
func TestChainAsksDeclinerAgainAfterApply(t *testing.T) {
	gate := &Step{Name: "gate", Kind: Downgrade, Direction: Events, Since: negotiate.Current,
		NewEvent: func() EventStep { return &gateRun{} }}
	var out []string
	run := NewRun(Events, negotiate.Current, negotiate.MustParse("0.0.45"), nil)
	cr := EventChain(run.To, []*Step{gate}).Start(run, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, string(ev)) })
	relayed(cr, &out,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"OPEN"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"b"}`)
	expect(t, out, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"opened"}`)
}

// run-after-error declines a run's deltas once it decided the run goes on,
// but still sees its RUN_ERROR, and every delta of the run after it, which
// it drops; asked as the relay asks (Wanted, then ShapeWanted).
func TestRunAfterErrorSeesErrorAfterDeclinedDeltas(t *testing.T) {
	st := &StreamState{}
	chain := EventChain(negotiate.MustParse("0.0.45"), Registry())
	run := func(events ...string) (out []string) {
		r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.45"), nil)
		r.Stream = st
		cr := chain.Start(r, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, string(ev)) })
		relayed(cr, &out, events...)
		return out
	}
	first := []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"b"}`,
		`{"type":"RUN_ERROR","message":"boom"}`,
	}
	expect(t, run(first...), first...)
	if !st.Errored {
		t.Fatal("the RUN_ERROR after the declined deltas did not mark the stream")
	}
	if out := run(`{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m2","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"c"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"d"}`); len(out) != 0 {
		t.Errorf("the run after the error reached the consumer: %q", out)
	}
}
