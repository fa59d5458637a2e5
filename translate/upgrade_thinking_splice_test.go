package translate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// thinkingGeneral is thinkingToReasoning without its splice: every event
// takes rewrite, the path that reads every member. The splice must never
// be told apart from it.
var thinkingGeneral = func() *Step {
	s := *thinkingToReasoning
	s.NewEvent = func() EventStep { return &generalThinkingRun{} }
	return &s
}()

type generalThinkingRun struct{ thinkingRun }

func (g *generalThinkingRun) Apply(r *Run, ev []byte, emit func([]byte)) {
	if e, ok := g.classify(r.EventType()); ok {
		g.rewrite(r, ev, e, emit)
		return
	}
	emit(ev)
}

// translatedShapes records every Translated call.
type translatedShapes struct{ shapes []string }

func (o *translatedShapes) Translated(s *Step, shape string, _, _ negotiate.Version) {
	o.shapes = append(o.shapes, s.Name+":"+shape)
}
func (o *translatedShapes) Warn(*Run, Warning) {}

// thinkingRunOf runs events through step alone for a 1.0 consumer, each in
// a buffer that is overwritten once pushed (as the scanner reuses its
// own), and returns all the step did: the events, warnings and
// translations.
func thinkingRunOf(step *Step, events []string) string {
	obs := &translatedShapes{}
	r := NewRun(Events, negotiate.Version{}, negotiate.Current, obs)
	r.RunID = "r1"
	var out []string
	cr := EventChain(r.To, []*Step{step}).Start(r, negotiate.Plan{}, func(ev, _ []byte) { out = append(out, string(ev)) })
	for _, ev := range events {
		buf := []byte(ev)
		cr.Push(buf)
		for i := range buf {
			buf[i] = 'x'
		}
	}
	var b strings.Builder
	for _, ev := range out {
		fmt.Fprintf(&b, "event %s\n", ev)
	}
	for _, w := range r.Warnings() {
		fmt.Fprintf(&b, "warning %s ×%d: %s\n", w.Shape, w.Count, w.Why)
	}
	for _, s := range obs.shapes {
		fmt.Fprintf(&b, "translated %s\n", s)
	}
	return b.String()
}

// spliced counts the events of a stream the splice takes.
func spliced(events []string) int {
	n := 0
	t := &thinkingRun{}
	for _, ev := range events {
		if e, ok := t.classify(rules.PeekType([]byte(ev))); ok && t.plain([]byte(ev), e.typ) {
			n++
		}
	}
	return n
}

func sameAsGeneral(t *testing.T, events []string) {
	t.Helper()
	got, want := thinkingRunOf(thinkingToReasoning, events), thinkingRunOf(thinkingGeneral, events)
	if got != want {
		t.Fatalf("events:\n%s\nsplice:\n%s\ngeneral:\n%s", strings.Join(events, "\n"), got, want)
	}
}

var (
	thinkingTypes = []string{"THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT",
		"THINKING_TEXT_MESSAGE_END", "THINKING_END"}
	// thinkingMembers are members the step reads, reshapes or must copy as
	// they are, written plainly and in every way a key can hide.
	thinkingMembers = []string{
		`"delta":"Let me think."`, `"delta":"a\"b\\c\n"`, `"delta":"caf\u00e9 \ud83d\ude00"`, `"delta":"\u0041 letter"`,
		`"delta":"\\u0041 no escape"`, `"delta":"a messageId, a title, a role"`, `"delta":""`, `"delta":null`, `"delta":"\u00"`,
		`"timestamp":1700000000000`, `"rawEvent":null`, `"rawEvent":{"messageId":"inner","title":"t","role":"r"}`,
		`"messageId":"own"`, `"messageId":""`, `"messageId":null`, `"messageId":7`, `"messageId":"o\"wn"`,
		`"m\u0065ssageId":"escaped"`, `"messageId\u0000":"nul"`, `"title":"plan"`, `"title":""`, `"title":null`,
		`"t\u0069tle":"escaped"`, `"role":"assistant"`, `"role":"reasoning"`, `"role":null`, `"r\u006fle":"assistant"`,
		`"type":"SECOND"`, `"x":[1,{"y":"z"}]`, `"\u00e9":"accent key"`, `"ti":"tle"`,
	}
)

// thinkingEventOf writes an event of type typ with members, in one of the
// layouts encoders use (and a few they do not).
func thinkingEventOf(rng *rand.Rand, typ string, members []string) string {
	layout := rng.IntN(10)
	typeMember := `"type":"` + typ + `"`
	switch layout {
	case 0:
		typeMember = `"type": "` + typ + `"`
	case 1:
		typeMember = `"type":"` + strings.Replace(typ, "_", `\u005f`, 1) + `"`
	}
	all := append([]string{typeMember}, members...)
	if layout == 2 && len(members) > 0 {
		all[0], all[len(all)-1] = all[len(all)-1], all[0] // type last
	}
	sep := ","
	if layout == 3 {
		sep = ", "
	}
	ev := "{" + strings.Join(all, sep) + "}"
	switch layout {
	case 4:
		ev = " " + ev + "\n"
	case 5:
		ev = `{ ` + ev[1:]
	}
	return ev
}

func TestThinkingSpliceMatchesGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 45))
	total, fast := 0, 0
	for range 3000 {
		var events []string
		for range 1 + rng.IntN(8) {
			typ := thinkingTypes[rng.IntN(len(thinkingTypes))]
			if rng.IntN(12) == 0 {
				typ = "TEXT_MESSAGE_CONTENT"
			}
			var members []string
			for range rng.IntN(4) {
				members = append(members, thinkingMembers[rng.IntN(len(thinkingMembers))])
			}
			events = append(events, thinkingEventOf(rng, typ, members))
		}
		sameAsGeneral(t, events)
		total += len(events)
		fast += spliced(events)
	}
	// The comparison means something only if both paths are taken often.
	if fast < total/5 || fast > total*4/5 {
		t.Errorf("the splice took %d of %d events", fast, total)
	}
}

// The streams producers send: every event takes the splice.
func TestThinkingSpliceTakesPlainStreams(t *testing.T) {
	events := []string{
		`{"type":"THINKING_START","timestamp":1}`,
		`{"type":"THINKING_TEXT_MESSAGE_START"}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"I will call the weather tool."}`,
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"caf\u00e9 \"quoted\""}`,
		`{"type":"THINKING_TEXT_MESSAGE_END"}`,
		`{"type":"THINKING_END"}`,
	}
	if n := spliced(events); n != len(events) {
		t.Errorf("the splice took %d of %d events", n, len(events))
	}
	sameAsGeneral(t, events)
}

func FuzzThinkingSplice(f *testing.F) {
	f.Add(`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x"}`, `{"type":"THINKING_TEXT_MESSAGE_END","m\u0065ssageId":"a"}`)
	f.Add(`{"type":"THINKING_START","title":"t"}`, `{"type":"THINKING_END","delta":"\u004"}`)
	f.Add(`{"type":"THINKING_TEXT_MESSAGE_START","role":"assistant"}`, `{"type":"THINKING_TEXT_MESSAGE_START"`)
	f.Fuzz(func(t *testing.T, a, b string) {
		sameAsGeneral(t, []string{a, b, a})
	})
}
