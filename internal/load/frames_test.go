package load

import (
	"strings"
	"testing"
)

// Every way of cutting a stream in two, and byte by byte, gives the same
// events, whether its lines end in LF, CRLF or CR.
func TestFrameSplitterAcrossPieces(t *testing.T) {
	lf := "data: {\"a\":1}\n\n: keep-alive\n\nevent: x\ndata: {\"b\":\ndata: 2}\n\ndata:{\"c\":3}\n\n"
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		splitEveryWay(t, strings.ReplaceAll(lf, "\n", eol))
	}
}

func splitEveryWay(t *testing.T, stream string) {
	t.Helper()
	want := []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`}
	// Every way of cutting the stream in two, and byte by byte.
	cuts := [][]int{}
	for i := 0; i <= len(stream); i++ {
		cuts = append(cuts, []int{i})
	}
	var every []int
	for i := 1; i < len(stream); i++ {
		every = append(every, i)
	}
	cuts = append(cuts, every)
	for _, cut := range cuts {
		var got []string
		s := &FrameSplitter{OnEvent: func(d []byte) { got = append(got, string(d)) }}
		s.Reset()
		prev := 0
		for _, c := range append(cut, len(stream)) {
			s.Write([]byte(stream[prev:c]))
			prev = c
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || s.Empty != 1 || s.Pending() {
			t.Fatalf("%q cut %v: got %q (empty %d, pending %v), want %q", stream, cut, got, s.Empty, s.Pending(), want)
		}
	}
}
