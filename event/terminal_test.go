package event

import (
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
