package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestDeleteItems(t *testing.T) {
	doc := []byte(`{"a":[1, 2 ,3,4], "b":{"x":1,"y":2}}`)
	cases := []struct {
		path string
		drop []bool
		want string
	}{
		{"a", []bool{true, false, false, false}, `{"a":[2 ,3,4], "b":{"x":1,"y":2}}`},
		{"a", []bool{false, true, false, true}, `{"a":[1, 3], "b":{"x":1,"y":2}}`},
		{"a", []bool{false, false, true, true}, `{"a":[1, 2], "b":{"x":1,"y":2}}`},
		{"a", []bool{true, true, true, true}, `{"a":[], "b":{"x":1,"y":2}}`},
		{"b", []bool{true, false}, `{"a":[1, 2 ,3,4], "b":{"y":2}}`},
		{"b", []bool{false, true}, `{"a":[1, 2 ,3,4], "b":{"x":1}}`},
	}
	for _, c := range cases {
		var e Edits
		items := Items(Get(doc, c.path), nil)
		e.DeleteItems(items, func(i int) bool { return c.drop[i] })
		out, ok := e.Apply(doc, nil)
		if !ok || string(out) != c.want || !gjson.ValidBytes(out) {
			t.Errorf("%s %v: got %s ok=%v, want %s", c.path, c.drop, out, ok, c.want)
		}
	}
}

func TestApplyRefusesOverlap(t *testing.T) {
	var e Edits
	e.ReplaceString(1, 4, "x")
	e.ReplaceString(3, 5, "y")
	out, ok := e.Apply([]byte("abcdef"), nil)
	if ok || string(out) != "abcdef" {
		t.Errorf("overlap: %q %v", out, ok)
	}
}

func TestAppendJSONString(t *testing.T) {
	got := string(AppendJSONString(nil, "a\"\\\n\x01é\xff<"))
	if want := `"a\"\\\n\u0001é` + "\ufffd" + `<"`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if !gjson.Valid(got) || gjson.Parse(got).Str != "a\"\\\n\x01é\ufffd<" {
		t.Errorf("does not round-trip: %s", got)
	}
}

// The bytes are JSON.stringify's: every control character, the characters
// JSON escapes and some it does not, as node 20 wrote them.
func TestAppendJSONStringIsJSONStringify(t *testing.T) {
	var in strings.Builder
	for c := range 0x20 {
		in.WriteByte(byte(c))
	}
	in.WriteString("\"\\/<>&\u007f\u2028é😀")
	// node -e 'let s="";for(let i=0;i<0x20;i++)s+=String.fromCharCode(i);console.log(JSON.stringify(s+"\"\\/<>&\u007f\u2028é😀"))'
	want := `"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f` +
		`\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f` +
		`\"\\/<>&` + "\u007f\u2028é😀" + `"`
	if got := string(AppendJSONString(nil, in.String())); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// And as Go's encoder writes JSON with HTML escaping off, which differs
	// from JSON.stringify only on U+2028 and U+2029.
	for _, s := range []string{in.String(), "", "plain", "tab\there", "\x00\x1f\x7f"} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(strings.NewReplacer("\u2028", "", "\u2029", "").Replace(s)); err != nil {
			t.Fatal(err)
		}
		s = strings.NewReplacer("\u2028", "", "\u2029", "").Replace(s)
		if got, want := string(AppendJSONString(nil, s)), strings.TrimSuffix(b.String(), "\n"); got != want {
			t.Errorf("%q: got %s, encoding/json %s", s, got, want)
		}
	}
}

func TestRootOffsets(t *testing.T) {
	ev := []byte("  {\"type\":\"X\",\"k\":1}  ")
	var e Edits
	e.AppendMember(Root(ev), true, "n", []byte("2"))
	out, _ := e.Apply(ev, nil)
	if string(out) != "  {\"type\":\"X\",\"k\":1,\"n\":2}  " {
		t.Errorf("got %q", out)
	}
}
