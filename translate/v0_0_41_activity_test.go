package translate

import "testing"

func TestActivityDropped(t *testing.T) {
	steps := []*Step{activityDrop}
	in := []string{
		`{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"plan","content":{"s":1}}`,
		`{"type":"ACTIVITY_DELTA","messageId":"a","activityType":"plan","patch":[]}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"activity","activityType":"plan","content":{}},` +
			`{"id":"u","role":"user","content":"hi"},{"id":"b","role":"activity","activityType":"plan","content":{}}]}`,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"the activity"}]}`,
	}
	out, warns := through(t, "0.0.40", steps, in...)
	expect(t, out,
		`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"hi"}]}`,
		in[3])
	if got := shapes(warns); got != "ACTIVITY_SNAPSHOT×I,ACTIVITY_DELTA×I,MESSAGES_SNAPSHOT.messages.activity×II" {
		t.Errorf("warnings %s", got)
	}
	out, _ = through(t, "0.0.41", steps, in...)
	expect(t, out, in...)
}
