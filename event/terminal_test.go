package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

// An event that names its type twice is of the last type to every
// JavaScript consumer (JSON.parse keeps the last of a repeated key): the
// stream's idea of the run's terminal event is the consumer's (issue #31),
// whichever of the two is the terminal one, and the event is relayed as
// it came, translated or not.
func TestTerminalIsTheConsumersWhenAnEventNamesItsTypeTwice(t *testing.T) {
	const start = `data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n" +
		`data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}` + "\n\n"
	for _, c := range []struct {
		name, twice, want string
	}{
		{"finished last", `{"type":"TEXT_MESSAGE_END","messageId":"m","type":"RUN_FINISHED","threadId":"t","runId":"r"}`, "RUN_FINISHED"},
		{"errored last", `{"type":"TEXT_MESSAGE_END","messageId":"m","type":"RUN_ERROR","message":"x"}`, "RUN_ERROR"},
		{"finished first", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","type":"TEXT_MESSAGE_END","messageId":"m"}`, ""},
	} {
		in := start + "data: " + c.twice + "\n\n"
		for _, consumer := range []string{"1.0", "0.0.45"} {
			out, st := replayStream(t, []byte(in), negotiate.MustParse(consumer), negotiate.Version{})
			if !strings.Contains(string(out), "data: "+c.twice+"\n\n") {
				t.Errorf("%s, consumer %s: the event was not relayed as it came: %s", c.name, consumer, out)
			}
			got := consumerTerminal(t, out)
			if got != c.want {
				t.Fatalf("%s, consumer %s: the consumer reads terminal %q, want %q: %s", c.name, consumer, got, c.want, out)
			}
			if st.Terminal != got || st.InRun != (got == "") || st.Owed() != (got == "") {
				t.Errorf("%s, consumer %s: the stream has Terminal %q (in run %v, owed %v), the consumer %q",
					c.name, consumer, st.Terminal, st.InRun, st.Owed(), got)
			}
		}
	}
}

// consumerTerminal is the terminal event a JavaScript consumer reads in an
// SSE stream, "" when the last run has none: each event decoded as
// JSON.parse decodes it, by encoding/json, which keeps the last of a
// repeated key too.
func consumerTerminal(t *testing.T, stream []byte) string {
	t.Helper()
	sc := NewScanner(bytes.NewReader(stream), 0)
	terminal := ""
	for {
		f, err := sc.Next()
		if err == io.EOF {
			return terminal
		}
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any // keys compared exactly, as JSON.parse does
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatalf("not JSON: %s", f.Data)
		}
		switch typ, _ := ev["type"].(string); typ {
		case "RUN_STARTED":
			terminal = ""
		case "RUN_FINISHED", "RUN_ERROR":
			terminal = typ
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
