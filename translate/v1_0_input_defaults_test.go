package translate

import "testing"

func TestInputToolsContext(t *testing.T) {
	out, warns := through(t, "0.0.45", []*Step{inputToolsContext},
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[]}}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"f","description":"d"}] }}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
	)
	expect(t, out,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[]}}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"f","description":"d"}] ,"context":[]}}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
	)
	// Lossless: silent though it added four members.
	claims(t, inputToolsContext, false, warns)
	// 1.0 reads an input without them.
	ev := `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[]}}`
	out, _ = through(t, "1.0", []*Step{inputToolsContext}, ev)
	expect(t, out, ev)
}
