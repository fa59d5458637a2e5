package translate

import "testing"

func TestTextNameStripped(t *testing.T) {
	steps := []*Step{textName}
	out, warns := through(t, "0.0.47", steps,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","name":"Ada","messageId":"c","delta":"x"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"y"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"n","name":42}`,
	)
	expect(t, out,
		`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"x"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c","delta":"y"}`,
		// Not a string: malformed for the producer, unknown to the
		// consumer, not repaired.
		`{"type":"TEXT_MESSAGE_START","messageId":"n","name":42}`,
	)
	if got := shapes(warns); got != "TEXT_MESSAGE_START.name×I,TEXT_MESSAGE_CHUNK.name×I" {
		t.Errorf("warnings %s", got)
	}
	ev := `{"type":"TEXT_MESSAGE_START","messageId":"m","name":"Ada"}`
	out, _ = through(t, "0.0.48", steps, ev)
	expect(t, out, ev)
}
