package translate

import (
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

func TestNullParentMessageID(t *testing.T) {
	ev := `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":null}`
	out, warns := through(t, "0.0.54", []*Step{nullParentMessageID}, ev,
		`{"type":"TOOL_CALL_CHUNK","parentMessageId":null,"delta":"{}"}`,
		`{"type":"TOOL_CALL_CHUNK","parentMessageId":"p"}`)
	expect(t, out,
		`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`,
		`{"type":"TOOL_CALL_CHUNK","delta":"{}"}`,
		`{"type":"TOOL_CALL_CHUNK","parentMessageId":"p"}`)
	// Lossless: the null meant absent; silent though it rewrote two events.
	claims(t, nullParentMessageID, false, warns)
	// From a producer known to predate 0.0.58 the null is malformed: passed on.
	r := NewRun(Events, negotiate.MustParse("0.0.54"), negotiate.MustParse("0.0.50"), nil)
	out, _ = throughRun(t, r, []*Step{nullParentMessageID}, ev)
	expect(t, out, ev)
	// A 0.0.58 consumer reads the null as absent.
	out, _ = through(t, "0.0.58", []*Step{nullParentMessageID}, ev)
	expect(t, out, ev)
}
