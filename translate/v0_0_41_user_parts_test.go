package translate

import "testing"

func TestUserPartsFlattened(t *testing.T) {
	steps := []*Step{userParts}
	out, warns := through(t, "0.0.40", steps,
		`{"type":"MESSAGES_SNAPSHOT","messages":[`+
			`{"id":"1","role":"user","content":[{"type":"text","text":"a\"b"},{"type":"text","text":" \u00e9\n"}]},`+
			`{"id":"2","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"x"},{"type":"text","text":"c"},{"type":"image","source":{"type":"url","value":"https://example.com/a.png"}}]},`+
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

// TestUserPartsMalformedMediaPartNotRepaired: a media part a 1.0 reader
// rejects (an image without its source, found by FuzzEventTranslation; a
// source without a type; a data source without mimeType; a url that is no
// string) is not dropped by the flattening, which would repair the message
// into string content: the message passes as it came, for the consumer to
// report. A well-formed neighbour message is still flattened.
func TestUserPartsMalformedMediaPartNotRepaired(t *testing.T) {
	malformed := []string{
		`[{"type":"image"}]`,
		`[{"type":"text","text":"a"},{"type":"image"}]`,
		`[{"type":"image","source":{}}]`,
		`[{"type":"audio","source":{"type":"data","value":"x"}}]`,
		`[{"type":"video","source":{"type":"url","value":5}}]`,
		`[{"type":"document","source":"x"}]`,
		`[{"type":"image","source":{"type":"url","value":"u"},"id":7}]`,
	}
	for _, content := range malformed {
		ev := `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":` + content + `},` +
			`{"id":"2","role":"user","content":[{"type":"text","text":"ok"}]}]}`
		out, warns := through(t, "0.0.37", []*Step{userParts}, ev)
		expect(t, out, `{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":`+content+`},`+
			`{"id":"2","role":"user","content":"ok"}]}`)
		if got := shapes(warns); got != "" {
			t.Errorf("%s: warnings %s", content, got)
		}
	}
}
