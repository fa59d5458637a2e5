package load

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
)

// The load generator reads a stream's events and its terminal event as the
// relay does, whatever its line ends, on the cases where its own splitter
// and the relay's disagreed: a stream whose first line ended in LF and a
// later frame in CR (it kept to the first line's end), a byte-order mark,
// a bare "data" line, a last frame the stream ended without a blank line.
func TestLoadSplitsAsTheRelayDoes(t *testing.T) {
	const (
		started  = `data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}`
		content  = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`
		finished = `data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
	)
	for _, tc := range []struct {
		name, stream string
		events       int64
	}{
		{"LF", started + "\n\n" + content + "\n\n" + finished + "\n\n", 3},
		{"CRLF", started + "\r\n\r\n" + content + "\r\n\r\n" + finished + "\r\n\r\n", 3},
		{"CR", started + "\r\r" + content + "\r\r" + finished + "\r\r", 3},
		{"LF then CR", started + "\n\n" + content + "\r\r" + finished + "\r\r", 3},
		{"CR then LF", started + "\r\r" + content + "\n\n" + finished + "\n\n", 3},
		{"CRLF then CR", started + "\r\n\r\n" + finished + "\r\r", 2},
		{"LF, CR inside a frame", started + "\n\n: note\r" + finished + "\n\n", 2},
		{"byte-order mark", "\xEF\xBB\xBF" + started + "\n\n" + finished + "\n\n", 2},
		{"bare data line", started + "\n\n" + "data\n" + content[len("data: "):] + "\n\n" + finished + "\n\n", 3},
		{"open at the end", started + "\n\n" + finished, 2},
		{"open at the end, CR", started + "\r\r" + finished + "\r", 2},
	} {
		relayEvents, relayTerminal := relaySplit(t, tc.stream)
		if relayEvents != tc.events || relayTerminal != "RUN_FINISHED" {
			t.Fatalf("%s: the relay reads %d events, terminal %q; the case wants %d, RUN_FINISHED", tc.name, relayEvents, relayTerminal, tc.events)
		}
		for _, piece := range []int{len(tc.stream), 7, 1} {
			st := &runState{r: &Runner{}, sh: &shard{total: newHists(), interval: newHist()}}
			st.sc, st.judge = event.NewScanner(nil, 0), NewRunJudge()
			for off := 0; off < len(tc.stream); off += piece {
				if err := st.sc.Push([]byte(tc.stream[off:min(off+piece, len(tc.stream))]), st.frame); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.sc.End(st.frame); err != nil {
				t.Fatal(err)
			}
			if st.events != relayEvents || st.judge.Terminal() != relayTerminal {
				t.Errorf("%s in pieces of %d: load reads %d events, terminal %q; the relay %d, %q",
					tc.name, piece, st.events, st.judge.Terminal(), relayEvents, relayTerminal)
			}
		}
	}
}

// relaySplit passes stream through the relay's event layer, as a producer's
// answer, and returns how many events it relayed and the terminal one.
func relaySplit(t *testing.T, stream string) (int64, string) {
	t.Helper()
	var out bytes.Buffer
	st := (&event.Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &out)
	sc, src := event.NewScanner(nil, 0), strings.NewReader(stream)
	for {
		rerr, werr := st.Pump(sc, src)
		if werr != nil || (rerr != nil && rerr != io.EOF) {
			t.Fatalf("relay: %v, %v", rerr, werr)
		}
		if rerr == io.EOF {
			return int64(st.Events), st.Terminal
		}
	}
}
