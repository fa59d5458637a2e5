package event

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// A keep-alive goes between two frames as a comment of its own, counted as
// a comment written to the consumer (none read), seen by the tap, and the
// events around it stay as they were.
func TestKeepAliveIsACommentBetweenFrames(t *testing.T) {
	const first = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	const second = "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	var out bytes.Buffer
	var tapped strings.Builder
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Current, &out)
	st.Counts = &Counts{}
	st.Tap = wroteTap(func(p []byte) { tapped.Write(p) })
	sc := NewScanner(strings.NewReader(first), 1<<20)
	f, err := sc.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Frame(&f); err != nil {
		t.Fatal(err)
	}
	if err := st.KeepAlive(); err != nil {
		t.Fatal(err)
	}
	sc = NewScanner(strings.NewReader(second), 1<<20)
	if f, err = sc.Next(); err != nil {
		t.Fatal(err)
	}
	if err := st.Frame(&f); err != nil {
		t.Fatal(err)
	}
	want := first + KeepAliveFrame + second
	if out.String() != want || tapped.String() != want {
		t.Errorf("written %q, tapped %q, want %q", out.String(), tapped.String(), want)
	}
	if st.Events != 2 || st.Bytes != len(want) {
		t.Errorf("events %d bytes %d, want 2 and %d", st.Events, st.Bytes, len(want))
	}
	c := st.Counts.By
	if c[ToConsumer][evComment] != (Count{Events: 1, Bytes: len(KeepAliveFrame)}) || c[FromProducer][evComment].Events != 0 {
		t.Errorf("comment counts %+v", [2]Count{c[FromProducer][evComment], c[ToConsumer][evComment]})
	}
}

// wroteTap is a Tap that hands what is written to a function.
type wroteTap func(p []byte)

func (f wroteTap) Wrote(p []byte)                                                         { f(p) }
func (wroteTap) Read([]byte)                                                              {}
func (wroteTap) Flushed(int)                                                              {}
func (wroteTap) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}
func (wroteTap) Warned(translate.Warning)                                                 {}
