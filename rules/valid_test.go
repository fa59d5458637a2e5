package rules

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// validReference is Valid as it was before its own pass: the nesting cap,
// then gjson's recursive validation. Valid must answer as it does.
func validReference(doc string) bool {
	return NestingWithin(doc, MaxNesting) && gjson.Valid(doc)
}

// validSeeds are documents on the edges of the grammar, of gjson's
// behaviour and of the eight-byte string scan.
func validSeeds() []string {
	seeds := []string{
		``, ` `, "\t\n\r ", `{}`, `[]`, ` {} `, "{}\n", "{}\v", "{}\f", "\u00a0{}",
		`{`, `}`, `[`, `]`, `[}`, `{]`, `{}}`, `[]]`, `{}{}`, `[][]`, `{} x`, `{}x`, `{},`,
		`{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a" : 1 , "b" : [ 1 , 2 ] }`, `{"a":}`, `{"a"}`,
		`{"a":1 "b":2}`, `{"a"::1}`, `{a:1}`, `{'a':1}`, `{"a":1,,"b":2}`, `{1:2}`, `{"a":1}}`,
		`[1,]`, `[,1]`, `[1,,2]`, `[1 2]`, `[ ]`, "[\t1\n,\r2 ]", `[[],[[]],{}]`, `[{"a":[{}]}]`,
		`0`, `-0`, `-`, `--1`, `+1`, `01`, `-01`, `00`, `1.`, `.1`, `1.0`, `1.5.3`, `1e5`, `1E5`,
		`1e+5`, `1e-5`, `1e`, `1e+`, `1e5.0`, `1.0e-05`, `-0.0E+0`, `1ee5`, `0x10`, `1_000`,
		`123456789012345678901234567890`, `[-]`, `[-0]`, `[01]`, `{"a":01}`, `{"a":-}`, `[1e]`,
		`true`, `false`, `null`, `tru`, `fals`, `nul`, `truex`, `True`, `NULL`, `[true,false,null]`,
		`[truefalse]`, `{"a":nul}`, `{"a":null}`, `nulll`, `t`, `f`, `n`, `NaN`, `Infinity`,
		`""`, `"`, `"a`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\a"`, `"\x41"`, `"\'"`, `"\0"`,
		`"\u"`, `"\u1"`, `"\u12"`, `"\u123"`, `"\u1234"`, `"\u12345"`, `"\uABCD"`, `"\uabcd"`,
		`"\uGHIJ"`, `"\u00e9"`, `"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`, `"\ud800\u0041"`, `"\U0041"`,
		`"\u00"`, `"\u 123"`, `"\\\""`, `"\\\\"`, `"a\\"b"`, `"a\"b"`,
		"\"\x00\"", "\"\x01\"", "\"\x1f\"", "\"\x20\"", "\"\x7f\"", "\"\t\"", "\"\n\"",
		"\"\xff\"", "\"\xc3\xa9\"", "\"\xc3\"", "\"\xe2\x82\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		"\"\xc0\xaf\"", "\"\xef\xbb\xbf\"", "\xef\xbb\xbf{}", "{\"\xff\":1}", "[\"\x80\x80\x80\x80\x80\x80\x80\x80\x80\"]",
		"\xff", "{\xff}", "[1\xff]", "1\x00", "\x00", "{\"a\":1}\x00",
		`{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":" needs an and moves on #7:1700000000000000010#"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"call_8fa2","delta":"{\"city\":\"Par"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"It is 21 °C"}`,
	}
	// Every special byte at every offset of a long string, so that each
	// lane of the word scan and the byte-by-byte tail see each of them.
	for _, special := range []string{`"`, `\`, `\\`, `\"`, `\u0041`, `\u004`, "\x00", "\x1f", "\x7f", "\x80", "\xff", "\xc3\xa9", ` `, `!`, `#`, `[`, `]`} {
		for at := range 20 {
			s := strings.Repeat("a", at) + special + strings.Repeat("b", 19-at)
			seeds = append(seeds, `"`+s+`"`, `{"k":"`+s+`","l":1}`, `["`+s)
		}
	}
	// Nesting on either side of the cap, and on either side of the 64
	// levels Valid keeps in one word.
	for _, d := range []int{63, 64, 65, 128, MaxNesting - 1, MaxNesting, MaxNesting + 1} {
		seeds = append(seeds,
			strings.Repeat("[", d)+strings.Repeat("]", d),
			strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d),
			strings.Repeat("[", d)+strings.Repeat("]", d-1),
			strings.Repeat("[", d)+strings.Repeat("]", d)+"]",
			strings.Repeat("[", d)+strings.Repeat("}", d),
			strings.Repeat("[", d),
			strings.Repeat("[{}", d)+strings.Repeat("]", d),
			`{"a":`+strings.Repeat("[", d-1)+strings.Repeat("]", d-1)+`}`,
			`{"a":"`+strings.Repeat("[", 3*d)+`"}`,
			strings.Repeat("[", d)+`"]"`+strings.Repeat("]", d),
			strings.Repeat("[", d)+`x`+strings.Repeat("]", d),
			strings.Repeat(" [", d)+strings.Repeat(" ]", d)+" ",
		)
	}
	return seeds
}

func TestValidMatchesReference(t *testing.T) {
	for _, s := range validSeeds() {
		if got, want := Valid(s), validReference(s); got != want {
			t.Errorf("Valid(%.80q) = %v, reference %v", s, got, want)
		}
	}
}

// FuzzValidMatchesGJSON holds Valid to the answers of validReference. To
// fuzz:
//
//	go test -run '^$' -fuzz FuzzValidMatchesGJSON -fuzztime 60s ./rules/
func FuzzValidMatchesGJSON(f *testing.F) {
	for _, s := range validSeeds() {
		f.Add([]byte(s))
	}
	for _, c := range benchEvents {
		f.Add([]byte(c.ev))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		if got, want := Valid(s), validReference(s); got != want {
			t.Fatalf("Valid(%q) = %v, reference %v", s, got, want)
		}
	})
}

func TestValidDoesNotAllocate(t *testing.T) {
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	for _, s := range []string{benchEvents[0].ev, deep} {
		if n := testing.AllocsPerRun(100, func() { Valid(s) }); n != 0 {
			t.Errorf("%.40q: %v allocations", s, n)
		}
	}
}

func BenchmarkValid(b *testing.B) {
	cases := []struct{ name, doc string }{
		{"THINKING_TEXT_MESSAGE_CONTENT", `{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":" needs an and moves on #7:1700000000000000010#"}`},
		{"TOOL_CALL_ARGS", benchEvents[1].ev},
		{"RUN_FINISHED", benchEvents[5].ev},
		{"MESSAGES_SNAPSHOT", benchEvents[7].ev},
		{"long-delta", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"` + strings.Repeat("Lorem ipsum dolor sit amet, é \\n ", 64) + `"}`},
		{"nested-100", strings.Repeat(`{"a":[`, 50) + "1" + strings.Repeat("]}", 50)},
	}
	for _, c := range cases {
		for _, impl := range []struct {
			name string
			f    func(string) bool
		}{{"new", Valid}, {"reference", validReference}} {
			b.Run(c.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.doc)))
				b.ReportAllocs()
				for b.Loop() {
					if !impl.f(c.doc) {
						b.Fatal("not valid")
					}
				}
			})
		}
	}
}

// ValidEvent answers as Valid does, and finds a top-level key named twice,
// escaped or not, past the keys it keeps and past 64 levels of nesting.
func TestValidEventFindsARepeatedKey(t *testing.T) {
	many := `{`
	for i := range 20 {
		many += `"k` + strconv.Itoa(i) + `":1,`
	}
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	for doc, want := range map[string][2]bool{
		`{"type":"A","type":""}`:                   {true, true},
		` {"type":"A", "typ\u0065":"B"} `:          {true, true},
		`{"type":"A","content":[{"type":"text"}]}`: {true, false}, // another object's key
		`{"type":"A","x":{"delta":1,"delta":2}}`:   {true, false},
		`{"type":"A","delta":"x","delta":"y"}`:     {true, true},
		`{"type":"A","delta":"x"`:                  {false, false},
		`["type","type"]`:                          {true, false},
		many + `"k3":2}`:                           {true, true},
		many + `"k19":2}`:                          {true, true}, // past the keys kept
		many + `"k99":2}`:                          {true, false},
		`{"a":` + deep + `,"b":1,"a":2}`:           {true, true},
		`{"a":` + deep + `,"b":1}`:                 {true, false},
	} {
		ok, repeats := ValidEvent(doc)
		if ok != want[0] || repeats != want[1] || ok != Valid(doc) {
			t.Errorf("ValidEvent(%.60s) = %v, %v, want %v, %v (Valid %v)", doc, ok, repeats, want[0], want[1], Valid(doc))
		}
	}
}
