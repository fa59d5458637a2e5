package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func TestUnrecognisedMaterial(t *testing.T) {
	steps := []*Step{unrecognisedMaterial}
	out, warns := through(t, "0.0.54", steps,
		`{"type":"USAGE_METADATA","x":1}`,
		`{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"narrator","content":"x"},{"id":"b","role":"user","content":[{"type":"widget"},{"type":"text","text":"t"}]},{"id":"c","role":"user","content":[{"type":"sticker"}]}]}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"timeout"}}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}`,
	)
	expect(t, out,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"b","role":"user","content":[{"type":"text","text":"t"}]},{"id":"c","role":"user","content":""}]}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}`,
	)
	if got := shapes(warns); got != "unrecognised event type×I,SUBAGENT_STARTED×I,MESSAGES_SNAPSHOT.messages (unknown role)×I,MESSAGES_SNAPSHOT.messages.content (unknown part type)×II,RUN_FINISHED.outcome (unknown type)×I" {
		t.Errorf("warnings %s", got)
	}
	claims(t, unrecognisedMaterial, true, warns, "unrecognised event type", "RUN_FINISHED.outcome (unknown type)")
	// Malformed events pass whole.
	mal := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"narrator","content":"x"},{"id":1,"role":"user","content":"x"}]}`
	out, _ = through(t, "0.0.54", steps, mal)
	expect(t, out, mal)
}

// What 1.0 describes but finds malformed is the consumer's to refuse: a
// reasoning message without content, a document part without its source
// stay where they are for consumers that do not know them; well-formed ones
// go (the fuzzer found the document part repaired by its removal).
func TestUnrecognisedMaterialLeavesWhatOneZeroFindsMalformed(t *testing.T) {
	steps := []*Step{unrecognisedMaterial}
	out, warns := through(t, "0.0.41", steps,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"r","role":"reasoning"},{"id":"s","role":"reasoning","content":"x"},{"id":"u","role":"user","content":"hi"}]}`)
	expect(t, out, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"r","role":"reasoning"},{"id":"u","role":"user","content":"hi"}]}`)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages (unknown role)×I" {
		t.Errorf("warnings %s", got)
	}
	out, warns = through(t, "0.0.45", steps,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"document"},{"type":"document","source":{"type":"url","value":"u"}},{"type":"text","text":"t"}]}]}`)
	expect(t, out, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"document"},{"type":"text","text":"t"}]}]}`)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages.content (unknown part type)×I" {
		t.Errorf("warnings %s", got)
	}
}

// The step is offered only the types it may touch (Concerns): a type the
// consumer knows is none of its business but for the three it judges,
// which Wants agrees with; an unknown type is offered to it.
func TestUnrecognisedOfferedOnlyTypesItJudges(t *testing.T) {
	for _, target := range []string{"0.0.30", "0.0.45", "0.0.58"} {
		to := negotiate.MustParse(target)
		c := EventChain(to, Registry())
		offered := func(typ string) bool {
			for _, i := range c.stepsFor([]byte(typ)) {
				if c.Steps[i] == unrecognisedMaterial {
					return true
				}
			}
			return false
		}
		st := unrecognisedMaterial.NewEvent().(Wanter)
		r := NewRun(Events, negotiate.Current, to, nil)
		for _, typ := range rules.EventTypes(negotiate.Current) {
			ev := []byte(`{"type":"` + typ + `"}`)
			if wants := st.Wants(r, []byte(typ), ev); offered(typ) != wants {
				t.Errorf("to %s, %s: offered %v, wanted %v", target, typ, offered(typ), wants)
			}
		}
		if !offered("USAGE_METADATA") || !offered("RUN_FINISHED") || offered("TEXT_MESSAGE_CONTENT") {
			t.Errorf("to %s: offered USAGE_METADATA %v, RUN_FINISHED %v, TEXT_MESSAGE_CONTENT %v", target,
				offered("USAGE_METADATA"), offered("RUN_FINISHED"), offered("TEXT_MESSAGE_CONTENT"))
		}
	}
}
