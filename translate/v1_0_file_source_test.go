package translate

import "testing"

func TestFileSourceParts(t *testing.T) {
	out, warns := through(t, "0.0.59", []*Step{fileSourceParts},
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"file"},{"type":"document","source":{"type":"file","value":"h"}}]},{"id":"v","role":"user","content":[{"type":"image","source":{"type":"file","value":"h"}}]}]}`,
	)
	expect(t, out,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"file"}]},{"id":"v","role":"user","content":""}]}`)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages.content.source.file×II" {
		t.Errorf("warnings %s", got)
	}
	// Lossy: the file-sourced parts are content the consumer no longer sees.
	claims(t, fileSourceParts, true, warns, "MESSAGES_SNAPSHOT.messages.content.source.file")
	// A part with another source is not the step's.
	ev := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}]}`
	out, warns = through(t, "0.0.59", []*Step{fileSourceParts}, ev)
	expect(t, out, ev)
	if len(warns) != 0 {
		t.Errorf("a url source warned: %s", shapes(warns))
	}
}

// A file source without its value is malformed for 1.0: neither the
// file-source step nor media-to-binary drops it (the fuzzer found the drop
// repairing the part); a well-formed one beside it goes.
func TestFileSourcePartsLeaveAMalformedSource(t *testing.T) {
	in := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"document","source":{"type":"file"}},{"type":"image","source":{"type":"file","value":"h"}}]}]}`
	want := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"document","source":{"type":"file"}}]}]}`
	for _, tc := range []struct {
		to   string
		step *Step
	}{{"0.0.59", fileSourceParts}, {"0.0.45", mediaToBinary}} {
		out, _ := through(t, tc.to, []*Step{tc.step}, in)
		expect(t, out, want)
	}
}
