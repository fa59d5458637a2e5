package translate

import "testing"

func TestUserPartsFlattened(t *testing.T) {
	steps := []*Step{userParts}
	out, warns := through(t, "0.0.40", steps,
		`{"type":"MESSAGES_SNAPSHOT","messages":[`+
			`{"id":"1","role":"user","content":[{"type":"text","text":"a\"b"},{"type":"text","text":" \u00e9\n"}]},`+
			`{"id":"2","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"x"},{"type":"text","text":"c"},{"type":"image","source":{}}]},`+
			`{"id":"3","role":"user","content":[{"type":"text","text":5}]},`+
			`{"id":"4","role":"user","content":[{"type":"text","text":"ok"},"loose"]},`+
			`{"id":"5","role":"user","content":"plain"},`+
			`{"id":"6","role":"user","content":[]}]}`)
	expect(t, out, `{"type":"MESSAGES_SNAPSHOT","messages":[`+
		`{"id":"1","role":"user","content":"a\"b \u00e9\n"},`+
		`{"id":"2","role":"user","content":"c"},`+
		// Malformed parts: left for the consumer to report, never repaired.
		`{"id":"3","role":"user","content":[{"type":"text","text":5}]},`+
		`{"id":"4","role":"user","content":[{"type":"text","text":"ok"},"loose"]},`+
		`{"id":"5","role":"user","content":"plain"},`+
		`{"id":"6","role":"user","content":""}]}`)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages.content.binary×I,MESSAGES_SNAPSHOT.messages.content.image×I" {
		t.Errorf("warnings %s", got)
	}
}
