package relay

import (
	"bytes"
	"io"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// contentEvent is the hot path: most events of a real stream are text
// deltas that need no translation.
const contentEvent = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"The quick brown fox jumps over the lazy dog. "}` + "\n\n"

// canonicalFrame is event (one "data: ...\n\n" frame) as the scanner
// gives it when it needs no normalising.
func canonicalFrame(ev string) *event.Frame {
	return &event.Frame{Raw: []byte(ev), Data: []byte(ev[6 : len(ev)-2]), Canonical: true}
}

// pumpAll pumps src through st, as a stream does, until src ends (at the
// end of its input or on an error).
func pumpAll(tb testing.TB, st *event.Stream, src io.Reader) {
	tb.Helper()
	sc := event.NewScanner(nil, 0)
	for {
		rerr, werr := st.Pump(sc, src)
		if werr != nil {
			tb.Fatal(werr)
		}
		if rerr != nil {
			return
		}
	}
}

func benchStream(n int, frame string) []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")
	for i := 0; i < n; i++ {
		b.WriteString(frame)
	}
	b.WriteString(`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n\n")
	return b.Bytes()
}

func TestObserverLogsLossyTranslations(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		core, logs := observer.New(zapcore.DebugLevel)
		o := &Observer{Log: zap.New(core), Quiet: quiet}
		step := &translate.Step{Name: "thinking-to-reasoning", Direction: translate.Events}
		from, to := negotiate.MustParse("0.0.40"), negotiate.Current
		o.Translated(step, "THINKING_START", from, to)
		o.Translated(step, "THINKING_START", from, to)
		run := translate.NewRun(translate.Events, from, to, o)
		run.RunID, run.ThreadID = "r1", "t1"
		o.Warn(run, translate.Warning{Shape: "THINKING_START.title", Why: "no title in 1.0", Upgrade: "REASONING_*",
			Step: "thinking-to-reasoning", Direction: translate.Events, From: from, To: to, Count: 3})
		entries := logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
		if quiet {
			if len(entries) != 0 {
				t.Errorf("quiet, yet logged %v", entries)
			}
			continue
		}
		if len(entries) != 1 {
			t.Fatalf("logged %v", entries)
		}
		got := entries[0].ContextMap()
		for k, want := range map[string]any{"shape": "THINKING_START.title", "why": "no title in 1.0", "upgrade": "REASONING_*",
			"step": "thinking-to-reasoning", "direction": "events", "from": "0.0.40", "to": "1.0", "run": "r1", "count": int64(3)} {
			if got[k] != want {
				t.Errorf("field %s = %v, want %v", k, got[k], want)
			}
		}
	}
}

// BenchmarkPumpPassThrough is BenchmarkStreamPassThrough with the writer a
// stream really has: the consumer's chunked writer, flushed by Pump before
// each read.
func BenchmarkPumpPassThrough(b *testing.B) {
	in := benchStream(1000, contentEvent)
	t := &event.Translator{}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	r := bytes.NewReader(in)
	c := &memConn{}
	for b.Loop() {
		r.Reset(in)
		c.wrote.Reset()
		cw := newConsumerWriter(c, true, time.Minute)
		st := t.NewStream(negotiate.Current, negotiate.Version{}, &cw.ChunkWriter)
		pumpAll(b, st, r)
		if err := cw.End(); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}
