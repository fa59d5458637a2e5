package relay

import (
	"bytes"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// canonicalFrame is ev (one "data: ...\n\n" frame) as the scanner gives
// it when it needs no normalising.
func canonicalFrame(ev string) *event.Frame {
	raw, data := testkit.CanonicalFrame(ev)
	return &event.Frame{Raw: raw, Data: data, Canonical: true}
}

func TestLossLogLogsLossyTranslations(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		core, logs := observer.New(zapcore.DebugLevel)
		o := &lossLog{log: zap.New(core), quiet: quiet}
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
	in := testkit.BenchStream(1000, testkit.ContentEvent)
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
		testkit.PumpAll(b, st, event.NewScanner(nil, 0), r)
		if err := cw.End(); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}
