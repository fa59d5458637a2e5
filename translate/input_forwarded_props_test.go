package translate

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// forwardedPropsValues are JSON values of every kind, written the way a
// consumer might (escapes, whitespace, big numbers), which must reach the
// producer byte for byte.
var forwardedPropsValues = []string{
	`{}`,
	`{"user":"ada","nested":{"a":[1,2,{"b":null}]}}`,
	`{ "spaced" : [ 1 , 2 ] , "k" :"v" }`,
	`[]`,
	`[1,"two",null,true,{"x":[]}]`,
	`"plain"`,
	`"esc \" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \u0000"`,
	`""`,
	`0`,
	`-12.5e+300`,
	`123456789012345678901234567890`,
	`true`,
	`false`,
	`null`,
	`{"\u0066orwardedProps":"\u00e9","messages":[{"role":"activity"}],"protocolVersion":"9.9","tools":null,"parentRunId":null,"resume":[{"payload":null}]}`,
}

// rewritable are input members that make some step rewrite the document
// toward some producer; each run shuffles them around forwardedProps.
var rewritable = []string{
	`"threadId":"t"`,
	`"runId":"r"`,
	`"protocolVersion":"1.0"`,
	`"parentRunId":"p"`,
	`"state":null`,
	`"messages":[{"id":"a","role":"activity","activityType":"x","content":{}},` +
		`{"id":"u","role":"user","name":null,"subagentRunId":"s","metadata":{"k":1},"content":[{"type":"text","text":"hi","id":"t1"},{"type":"binary","mimeType":"image/png","data":"AA=="},{"type":"image","source":{"type":"url","value":"u"}},{"type":"document","source":{"type":"file","value":"f"}}]},` +
		`{"id":"r","role":"reasoning","content":"x","encryptedValue":"e"},` +
		`{"id":"tm","role":"tool","toolCallId":"c","content":[{"type":"text","text":"42"}]},` +
		`{"id":"as","role":"assistant","content":null}]`,
	`"tools":[{"name":"t","description":"d","parameters":null}]`,
	`"resume":[{"interruptId":"i","status":"resolved","payload":null}]`,
	`"unknownMember":{"forwardedProps":1}`,
}

var propertyVersions = []string{"1.0", "0.0.59", "0.0.54", "0.0.50", "0.0.48", "0.0.45", "0.0.44", "0.0.40", "0.0.39", "0.0.30"}

func TestForwardedPropsByteForByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	translated := 0
	for _, fp := range forwardedPropsValues {
		if !gjson.Valid(fp) {
			t.Fatalf("test value is not JSON: %s", fp)
		}
		for round := 0; round < 8; round++ {
			members := append([]string(nil), rewritable...)
			rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			members = members[:2+rng.IntN(len(members)-1)]
			at := rng.IntN(len(members) + 1)
			members = append(members[:at], append([]string{`"forwardedProps"` + []string{":", " : "}[round%2] + fp}, members[at:]...)...)
			in := "{" + strings.Join(members, ",") + "}"
			for _, from := range propertyVersions {
				for _, to := range propertyVersions {
					plan := negotiate.DecideInput(negotiate.MustParse(from), negotiate.MustParse(to))
					out, _ := TranslateInput(plan, []byte(in), nil)
					if string(out) != in {
						translated++
					}
					got := gjson.GetBytes(out, "forwardedProps")
					if !gjson.ValidBytes(out) || got.Raw != fp {
						t.Fatalf("%s→%s: forwardedProps changed\n in: %s\nout: %s", from, to, in, out)
					}
					n := 0
					Root(out).ForEach(func(k, _ gjson.Result) bool {
						if k.Str == "forwardedProps" {
							n++
						}
						return true
					})
					if n != 1 {
						t.Fatalf("%s→%s: %d forwardedProps members: %s", from, to, n, out)
					}
				}
			}
		}
	}
	if translated == 0 {
		t.Fatal("no input was rewritten: the property was not exercised")
	}

	// Absent stays absent, whatever is rewritten.
	in := `{"threadId":"t","runId":"r","messages":[],"protocolVersion":"1.0"}`
	for _, to := range propertyVersions {
		out, _ := TranslateInput(negotiate.DecideInput(negotiate.Current, negotiate.MustParse(to)), []byte(in), nil)
		if gjson.GetBytes(out, "forwardedProps").Exists() {
			t.Errorf("%s: forwardedProps invented: %s", to, out)
		}
	}
}
