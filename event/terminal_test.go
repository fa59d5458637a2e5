package event

import (
	"errors"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Stream.Terminal names the terminal event the consumer got, which a step
// may have changed: a 1.0 run that finished cancelled is a RUN_ERROR for a
// 0.0.x consumer, and the run's report must say so.
func TestTerminalIsWhatTheConsumerGot(t *testing.T) {
	const run = `data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n" +
		`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}` + "\n\n"
	for _, c := range []struct {
		consumer string
		want     string
	}{
		{"1.0", "RUN_FINISHED"},
		{"0.0.59", "RUN_ERROR"},
		{"0.0.45", "RUN_ERROR"},
	} {
		out, st := replayStream(t, []byte(run), negotiate.MustParse(c.consumer), negotiate.Version{})
		if !strings.Contains(string(out), `"type":"`+c.want+`"`) {
			t.Fatalf("consumer %s: the stream has no %s: %s", c.consumer, c.want, out)
		}
		if st.Terminal != c.want || st.InRun {
			t.Errorf("consumer %s: Terminal %q (in run %v), want %q: the consumer got %s", c.consumer, st.Terminal, st.InRun, c.want, out)
		}
	}
}

// failAfter is a sink that takes n writes, then fails every one.
type failAfter struct {
	n      int
	writes []string
}

func (w *failAfter) Write(p []byte) (int, error) {
	if len(w.writes) >= w.n {
		return 0, errSinkGone
	}
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// What the chain emits for a frame is written once the chain returns, all
// of it in one write, and that write's error is Frame's.
func TestShapedFrameIsOneWriteAndItsError(t *testing.T) {
	started := `{"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}`
	finished := `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`
	frame := func(ev string) *Frame {
		raw := AppendFrame([]byte(": note\n"), nil, []byte(ev))
		return &Frame{Raw: raw, Fields: raw[:len(": note\n")], Data: []byte(ev)}
	}
	w := &failAfter{n: 2}
	st := (&Translator{}).NewStream(negotiate.MustParse("0.0.45"), negotiate.Version{}, w)
	if err := st.Frame(frame(started)); err != nil {
		t.Fatal(err)
	}
	if err := st.Frame(frame(finished)); err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 2 || !strings.HasPrefix(w.writes[1], ": note\ndata: ") || !strings.Contains(w.writes[1], `"RUN_ERROR"`) {
		t.Fatalf("writes %q: want the shaped RUN_FINISHED, a RUN_ERROR, in one write after its fields", w.writes)
	}
	if st.Terminal != "RUN_ERROR" {
		t.Errorf("Terminal %q, want RUN_ERROR", st.Terminal)
	}
	w = &failAfter{n: 1}
	st = (&Translator{}).NewStream(negotiate.MustParse("0.0.45"), negotiate.Version{}, w)
	if err := st.Frame(frame(started)); err != nil {
		t.Fatal(err)
	}
	if err := st.Frame(frame(finished)); !errors.Is(err, errSinkGone) {
		t.Fatalf("Frame of a shaped event the sink failed to take: %v, want its error", err)
	}
}
