package rules

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// inputKeys are the members checkReadInput looks up in every document.
var inputKeys = []string{"runId", "threadId", "protocolVersion", "a", "b", "k", "k3", "k19", "type", "messages", "forwardedProps", ""}

// checkReadInput holds ReadInput to the checks it stands for: the verdict
// of Valid and of the object's first byte, the nesting said first, and
// each member's raw text as gjson finds it (the first of a key named
// twice, escapes in keys decoded).
func checkReadInput(t *testing.T, doc string) {
	t.Helper()
	in, j := ReadInput([]byte(doc))
	trimmed := strings.TrimLeft(doc, " \t\r\n")
	want := ""
	switch {
	case !NestingWithin(doc, MaxNesting):
		want = "max-depth:" + strconv.Itoa(MaxNesting)
	case !gjson.Valid(doc):
		want = "invalid-json"
	case trimmed[0] != '{':
		want = "type:object"
	}
	if want == "" {
		if j.Verdict != Accepted || len(j.Findings) != 0 {
			t.Fatalf("ReadInput(%.80q) = %+v, want accepted", doc, j)
		}
		if string(in.Body()) != doc {
			t.Fatalf("ReadInput(%.80q).Body() = %.80q", doc, in.Body())
		}
		for _, k := range inputKeys {
			if got, want := in.Member(k), gjson.Get(doc, k).Raw; got != want {
				t.Fatalf("ReadInput(%.80q).Member(%q) = %.40q, gjson %.40q", doc, k, got, want)
			}
		}
		return
	}
	if j.Verdict != Malformed || len(j.Findings) != 1 || j.Findings[0] != (Finding{Malformed, "", want, "RunAgentInput", true}) {
		t.Fatalf("ReadInput(%.80q) = %+v, want the one finding %s", doc, j, want)
	}
}

// readInputSeeds are RunAgentInput-like documents on the edges of what
// ReadInput records: nesting past the 64 levels of its first pass and at
// the cap, more members than it keeps, keys named twice, escaped keys,
// invalid JSON or UTF-8 at the top level, in a member and deep down.
func readInputSeeds() []string {
	many := `{`
	for i := range 20 {
		many += `"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i) + `,`
	}
	deep := func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }
	return []string{
		`{"threadId":"t","runId":"r","protocolVersion":"1.0","messages":[],"forwardedProps":{}}`,
		" \t{\"runId\" : \"r\" ,\n\"threadId\":\r\"t\"}\n ",
		`{"runId":"r","runId":"s","threadId":"t"}`,
		`{"a":1,"a":2,"runId":"r"}`,
		`{"run\u0049d":"r","runId":"s"}`,
		`{"runId":"r\u0031","threadId":"\"quoted\""}`,
		`{"runId":12,"threadId":-1.5e3,"protocolVersion":null}`,
		`{"runId":{"a":[1,{"runId":"inner"}]},"threadId":[]}`,
		`{"runId":true,"threadId":false,"protocolVersion":1}`,
		`{"":1,"a":""}`,
		many + `"runId":"r"}`,
		many + `"k3":"again","runId":"r"}`,
		`{"a":` + deep(70) + `,"runId":"r"}`,
		`{"a":` + deep(70) + `,"a":2,"runId":"r"}`,
		`{"a":` + deep(MaxNesting-1) + `,"runId":"r"}`,
		`{"a":` + deep(MaxNesting) + `,"runId":"r"}`,
		`{"a":` + deep(MaxNesting+1) + `,"runId":"r"}`,
		`{"a":` + strings.Repeat("[", MaxNesting) + `,"runId":"r"}`, // too deep and invalid: too deep is said
		`{"a":"` + strings.Repeat("[", 3*MaxNesting) + `","runId":"r"}`,
		"{\"runId\":\"\xff\xfe\",\"threadId\":\"\xed\xa0\x80\"}", // invalid UTF-8 is the reader's to judge
		"{\"\xff\":1,\"runId\":\"r\"}",
		`{"runId":"r"} x`, `{"runId":"r"}}`, `{"runId":"r",}`, `{"runId":"r"`, `{"runId":}`,
		`{"runId":"r","threadId":"t\x"}`, "{\"runId\":\"r\n\"}", `{"runId":"r","a":[1,2}`,
		`{"a":` + strings.Repeat("[", 70) + `x` + strings.Repeat("]", 70) + `}`,
		`[{"runId":"r"}]`, `"{\"runId\":1}"`, `null`, `7`, ``, ` `,
	}
}

func TestReadInput(t *testing.T) {
	for _, doc := range readInputSeeds() {
		checkReadInput(t, doc)
	}
	for _, doc := range validSeeds() {
		checkReadInput(t, doc)
	}
}

// FuzzReadInput holds ReadInput to checkReadInput. To fuzz:
//
//	go test -run '^$' -fuzz FuzzReadInput -fuzztime 60s ./rules/
func FuzzReadInput(f *testing.F) {
	for _, s := range readInputSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkReadInput(t, string(b)) })
}

// A read input is judged as its body: a member named twice or of the wrong
// type is malformed where it is, and the depth boundary is MaxNesting
// levels, as deep accepted and one more not.
func TestReadInputJudge(t *testing.T) {
	base := `"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":`
	for doc, want := range map[string]string{
		`{` + base + `{}}`:                           "",
		`{` + base + `{},"runId":"again"}`:           "/runId duplicate-key",
		`{` + base + `{},"protocolVersion":7}`:       "/protocolVersion type:string",
		`{"threadId":"t","runId":"r","messages":[]}`: "",
		`{"threadId":"t","messages":[]}`:             "/runId required",
	} {
		in, j := ReadInput([]byte(doc))
		if j.Verdict != Accepted {
			t.Fatalf("%s: %+v", doc, j)
		}
		got := ""
		if j = in.Judge(negotiate.Current); j.Verdict == Malformed {
			got = j.Findings[0].Pointer + " " + j.Findings[0].Rule
		}
		if got != want {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
	deep := func(d int) []byte {
		return []byte(`{"threadId":"t","runId":"r","messages":[],"state":` + strings.Repeat(`{"a":`, d-1) + "1" + strings.Repeat("}", d-1) + `}`)
	}
	if in, j := ReadInput(deep(MaxNesting)); j.Verdict != Accepted || in.Judge(negotiate.Current).Verdict != Accepted {
		t.Errorf("%d levels: %+v", MaxNesting, in.Judge(negotiate.Current))
	}
	if _, j := ReadInput(deep(MaxNesting + 1)); j.Verdict != Malformed || j.Findings[0].Rule != "max-depth:10000" {
		t.Errorf("%d levels: %+v", MaxNesting+1, j)
	}
}

// Reading an input, its ids and its version and judging it allocate
// nothing when it is accepted.
func TestReadInputDoesNotAllocate(t *testing.T) {
	body := []byte(`{"threadId":"thread-1","runId":"run-1","protocolVersion":"1.0","state":{},"messages":[{"id":"u1","role":"user","content":"Hello"}],"tools":[],"context":[],"forwardedProps":{}}`)
	n := testing.AllocsPerRun(100, func() {
		in, j := ReadInput(body)
		if j.Verdict != Accepted || in.Member("runId") != `"run-1"` || in.Member("threadId") == "" || in.Member("protocolVersion") == "" {
			t.Fatal("not read")
		}
		if in.Judge(negotiate.Current).Verdict != Accepted {
			t.Fatal("not accepted")
		}
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}
