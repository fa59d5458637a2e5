package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

func TestRunAfterError(t *testing.T) {
	st := &StreamState{}
	to := negotiate.MustParse("0.0.58")
	run := func(steps []*Step, events ...string) ([]string, []Warning) {
		r := NewRun(Events, negotiate.Version{}, to, nil)
		r.Stream = st
		return throughRun(t, r, steps, events...)
	}
	out, _ := run(Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`, `{"type":"RUN_ERROR","message":"boom"}`)
	expect(t, out, `{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`, `{"type":"RUN_ERROR","message":"boom"}`)
	out, warns := run(Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`, `{"type":"TEXT_MESSAGE_START","messageId":"m"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r2"}`)
	if len(out) != 0 {
		t.Errorf("later run reached the consumer: %v", out)
	}
	if got := shapes(warns); got != "RUN_STARTED after RUN_ERROR×III" {
		t.Errorf("warnings %s", got)
	}
	// Lossy: the later run's events are what the consumer does not see.
	_, warns = run([]*Step{runAfterError}, `{"type":"RUN_STARTED","threadId":"t","runId":"r3"}`)
	claims(t, runAfterError, true, warns, "RUN_STARTED after RUN_ERROR")
	// A refusal is an error too: the run after it goes.
	st2 := &StreamState{}
	r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.45"), nil)
	r.Stream = st2
	throughRun(t, r, Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r1"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r1","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"x"}]}}`)
	if !st2.Errored {
		t.Error("a refused run did not mark the stream errored")
	}
	// 0.0.59 reads later runs.
	st3 := &StreamState{Errored: true}
	r = NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.59"), nil)
	r.Stream = st3
	out, _ = throughRun(t, r, Registry(), `{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`)
	expect(t, out, `{"type":"RUN_STARTED","threadId":"t","runId":"r2"}`)
	// A run translated on its own, with no stream, is passed on.
	ev := `{"type":"RUN_STARTED","threadId":"t","runId":"r4"}`
	out, warns = through(t, "0.0.58", []*Step{runAfterError}, ev)
	expect(t, out, ev)
	if len(warns) != 0 {
		t.Errorf("a run without a stream warned: %s", shapes(warns))
	}
}
