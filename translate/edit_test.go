package translate

import (
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

func TestRootOffsets(t *testing.T) {
	ev := []byte("  {\"type\":\"X\",\"k\":1}  ")
	var e Edits
	e.AppendMember(Root(ev), true, "n", []byte("2"))
	out, _ := e.Apply(ev, nil)
	if string(out) != "  {\"type\":\"X\",\"k\":1,\"n\":2}  " {
		t.Errorf("got %q", out)
	}
}
