package translate

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func TestEmptyDeltaDropped(t *testing.T) {
	steps := []*Step{emptyDelta}
	in := []string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`,
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r","delta":""}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":" "}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"t","delta":""}`,
	}
	out, warns := through(t, "0.0.49", steps, in...)
	expect(t, out, in[1], in[4], in[5], in[6])
	if len(warns) != 0 {
		t.Errorf("lossless step warned: %s", shapes(warns))
	}
	// From 0.0.50 an empty delta is valid: the step is not in the chain.
	out, _ = through(t, "0.0.50", steps, in...)
	expect(t, out, in...)
}

// A producer known to predate 0.0.50 was itself bound by "Delta must not be
// an empty string": its empty delta is malformed, and dropping it would
// repair it (as null-parent-message-id leaves the null of a producer known
// to predate 0.0.58). It passes on for the consumer to report. A 1.0 or
// unknown producer's empty delta is valid and still goes.
func TestEmptyDeltaOfAnOlderProducerIsMalformed(t *testing.T) {
	ev := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`
	for _, c := range []struct {
		from string
		want []string
	}{
		{"0.0.45", []string{ev}},
		{"0.0.50", nil},
		{"1.0", nil},
	} {
		r := NewRun(Events, negotiate.MustParse(c.from), negotiate.MustParse("0.0.49"), nil)
		out, _ := throughRun(t, r, []*Step{emptyDelta}, ev)
		expect(t, out, c.want...)
	}
}

// The step wants exactly the events it drops, in any order of events:
// those whose first top-level delta is "" (what Apply reads), whether a
// message's deltas share their bytes up to the delta or not. A key with an
// escape before the delta may be "delta": such an event is wanted when it
// holds an empty string anywhere, for Apply to read.
func TestEmptyDeltaWantsWhatItDrops(t *testing.T) {
	evs := []string{
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"b","x":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","xxxxx":"","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"","x":1}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta" : ""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"n","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\"\""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","delta":"","messageId":"m"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","meta":{"delta":""},"delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","meta":{"delta":""},"delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":7}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"` + strings.Repeat("x", 300) + `","delta":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"` + strings.Repeat("x", 300) + `","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","del\u0074a":""}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","del\u0074a":"a"}`,
	}
	r := NewRun(Events, negotiate.Version{}, negotiate.MustParse("0.0.49"), nil)
	st := emptyDelta.NewEvent().(*emptyDeltaRun)
	for round := range 2 { // in order, then each after every other
		for i, a := range evs {
			for _, b := range []string{evs[(i+round)%len(evs)], a} {
				ev := []byte(b)
				r.hop++
				wants := st.Wants(r, rules.PeekType(ev), ev)
				drops := Get(ev, "delta").Raw == `""`
				if escaped := strings.Contains(b, `\u`); wants != drops && !(escaped && wants) {
					t.Errorf("%s: wanted %v, dropped %v", b, wants, drops)
				}
			}
		}
	}
}
