package translate

import "testing"

func TestBinaryToMedia(t *testing.T) {
	out, warns := through(t, "1.0", []*Step{binaryToMedia},
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"see"},{"type":"binary","mimeType":"image/png","data":"AAA=","filename":"a.png","id":"f1"},{"type":"binary","mimeType":"application/pdf","url":"https://x/y.pdf"},{"type":"binary","mimeType":"audio/wav","id":"only"}]}]}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r1","input":{"threadId":"t","runId":"r1","messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":"video/mp4","url":"u"}]}]}}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":7,"data":"x"}]}]}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"binary"}]}`,
	)
	expect(t, out,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"data","value":"AAA=","mimeType":"image/png"},"metadata":{"filename":"a.png"}},{"type":"document","source":{"type":"url","value":"https://x/y.pdf","mimeType":"application/pdf"}}]}]}`,
		`{"type":"RUN_STARTED","threadId":"t","runId":"r1","input":{"threadId":"t","runId":"r1","messages":[{"id":"u","role":"user","content":[{"type":"video","source":{"type":"url","value":"u","mimeType":"video/mp4"}}]}]}}`,
		// malformed: not repaired
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"binary","mimeType":7,"data":"x"}]}]}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"binary"}]}`,
	)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages.content.binary(id only)×I" {
		t.Errorf("warnings %s", got)
	}
}
