package translate

import "testing"

func TestMediaToBinary(t *testing.T) {
	steps := []*Step{mediaToBinary}
	snap := `{"type":"MESSAGES_SNAPSHOT","messages":[` +
		`{"id":"a","role":"assistant","content":"ok"},` +
		`{"id":"u","role":"user","content":[` +
		`{"type":"text","text":"see"},` +
		`{"type":"image","id":"p1","source":{"type":"data","value":"aGk\u003d","mimeType":"image/png"},"metadata":{"filename":"caf\u00e9.png","w":1}},` +
		`{"type":"audio","source":{"type":"url","value":"https://x/a.mp3","mimeType":"audio/mpeg"}},` +
		`{"type":"video","source":{"type":"url","value":"https://x/v"}},` +
		`{"type":"document","source":{"type":"file","value":"file-123","provider":"openai"}},` +
		`{"type":"image","source":{"type":"data","value":"aGk="}}` +
		`]}]}`
	out, warns := through(t, "0.0.45", steps, snap)
	expect(t, out, `{"type":"MESSAGES_SNAPSHOT","messages":[`+
		`{"id":"a","role":"assistant","content":"ok"},`+
		`{"id":"u","role":"user","content":[`+
		`{"type":"text","text":"see"},`+
		`{"type":"binary","mimeType":"image/png","data":"aGk\u003d","filename":"caf\u00e9.png"},`+
		`{"type":"binary","mimeType":"audio/mpeg","url":"https://x/a.mp3"},`+
		// A data source without mimeType is malformed: left for the
		// consumer to report.
		`{"type":"image","source":{"type":"data","value":"aGk="}}`+
		`]}]}`)
	if got := shapes(warns); got != "MESSAGES_SNAPSHOT.messages.content.video(url source without mimeType)×I,"+
		"MESSAGES_SNAPSHOT.messages.content.document(file source)×I" {
		t.Errorf("warnings %s", got)
	}

	// Every part dropped: the content becomes "". RUN_STARTED.input too.
	rs := `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[` +
		`{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}],"tools":[],"context":[]}}`
	out, warns = through(t, "0.0.48", steps, rs)
	expect(t, out, `{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[`+
		`{"id":"u","role":"user","content":""}],"tools":[],"context":[]}}`)
	if got := shapes(warns); got != "RUN_STARTED.input.messages.content.image(url source without mimeType)×I" {
		t.Errorf("warnings %s", got)
	}

	// 0.0.49 reads media parts; before 0.0.41 the user-parts step owns them.
	for _, target := range []string{"0.0.49", "0.0.40"} {
		out, _ = through(t, target, steps, snap)
		expect(t, out, snap)
	}
}
