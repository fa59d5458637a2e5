package event

import (
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Once a retired shape's translation has expired (deprecation registry),
// the relay no longer runs it: the shape is simply unrecognised, and a 1.0
// consumer gets it untouched. Before, it is translated.
func TestExpiredTranslationsAreLeftOut(t *testing.T) {
	const thinking = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n" +
		"data: {\"type\":\"THINKING_START\"}\n\n" +
		"data: {\"type\":\"THINKING_END\"}\n\n" +
		"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	d, ok := rules.LookupDeprecation("THINKING_START")
	if !ok {
		t.Fatal("THINKING_START is not in the registry")
	}
	now := d.Expires.Add(-time.Hour)
	tr := &Translator{Now: func() time.Time { return now }}
	out := string(replayWith(t, tr, []byte(thinking), negotiate.Current))
	if strings.Contains(out, "THINKING_") || !strings.Contains(out, "REASONING_START") {
		t.Fatalf("before expiry: %s", out)
	}
	binaryInput := rules.StepBinaryToMedia + "-input"
	before := tr.InputChain(negotiate.Current)
	if !hasStep(before, binaryInput) {
		t.Fatalf("before expiry the input chain has no %s", binaryInput)
	}
	if again := tr.InputChain(negotiate.Current); &again[0] != &before[0] {
		t.Error("the input chain was ordered again for the same target")
	}
	now = d.Expires // the same Translator: its chains must not outlive the expiry
	out = string(replayWith(t, tr, []byte(thinking), negotiate.Current))
	if !strings.Contains(out, `{"type":"THINKING_START"}`) || strings.Contains(out, "REASONING_") {
		t.Fatalf("after expiry: %s", out)
	}
	for _, s := range tr.InputSteps() {
		if s.Name == rules.StepThinkingToReasoning || s.Name == rules.StepBinaryToMedia+"-input" {
			t.Errorf("the expired step %s is still live", s.Name)
		}
	}
	if len(tr.InputSteps()) >= len(translate.Registry()) {
		t.Error("no step was left out after every registry entry expired")
	}
	if hasStep(tr.InputChain(negotiate.Current), binaryInput) {
		t.Errorf("after expiry the input chain still has %s", binaryInput)
	}
}

func hasStep(chain []*translate.Step, name string) bool {
	for _, s := range chain {
		if s.Name == name {
			return true
		}
	}
	return false
}
