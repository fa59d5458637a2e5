package event

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
	"github.com/agui-relay/agui-relay/negotiate"
)

// canonicalFrame is ev (one "data: ...\n\n" frame) as the scanner gives
// it when it needs no normalising.
func canonicalFrame(ev string) *Frame {
	raw, data := testkit.CanonicalFrame(ev)
	return &Frame{Raw: raw, Data: data, Canonical: true}
}

// pumpAll pumps src through st, as the relay does, until src ends.
func pumpAll(tb testing.TB, st *Stream, src io.Reader) {
	tb.Helper()
	testkit.PumpAll(tb, st, NewScanner(nil, 0), src)
}

func BenchmarkScanner(b *testing.B) {
	for _, tc := range []struct{ name, frame string }{
		{"canonical", testkit.ContentEvent},
		{"crlf", strings.ReplaceAll(testkit.ContentEvent, "\n", "\r\n")},
	} {
		in := testkit.BenchStream(1000, tc.frame)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			r := bytes.NewReader(in)
			for b.Loop() {
				r.Reset(in)
				sc := NewScanner(r, 0)
				for {
					if _, err := sc.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

// BenchmarkStreamPassThrough is the relay's per-event path without the
// network: scan, decide, write.
func BenchmarkStreamPassThrough(b *testing.B) {
	in := testkit.BenchStream(1000, testkit.ContentEvent)
	t := &Translator{}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	r := bytes.NewReader(in)
	w := bufio.NewWriter(io.Discard)
	for b.Loop() {
		r.Reset(in)
		st := t.NewStream(negotiate.Current, negotiate.Version{}, w)
		pumpAll(b, st, r)
		st.Close()
	}
}

func TestStreamPassThroughWritesInputUnchanged(t *testing.T) {
	in := testkit.BenchStream(10, testkit.ContentEvent)
	out, st := replayStream(t, in, negotiate.Current, negotiate.Version{})
	if !bytes.Equal(out, in) || st.Events != 12 || st.InRun || st.Terminal != "RUN_FINISHED" || st.Plan().Translate {
		t.Fatalf("out %q, stream %+v", out, st)
	}
}

func TestStreamFailWritesRunErrorWhenOwed(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Current, w)
	if !st.Owed() {
		t.Fatal("a stream with no run yet owes its consumer a terminal event")
	}
	st.Frame(canonicalFrame(testkit.ContentEvent))
	wrote, err := st.Fail("the producer's stream \"broke\"\n", "upstream_broken")
	w.Flush()
	want := testkit.ContentEvent + `data: {"type":"RUN_ERROR","message":"agui-relay: the producer's stream \"broke\"\n","code":"upstream_broken"}` + "\n\n"
	if !wrote || err != nil || out.String() != want || st.Terminal != "RUN_ERROR" {
		t.Fatalf("wrote %v, %v:\n got %q\nwant %q", wrote, err, out.String(), want)
	}
	// After a terminal event nothing is owed.
	if wrote, _ := st.Fail("again", "x"); wrote {
		t.Error("a second RUN_ERROR was written")
	}
}

// A legacy consumer's stream carries translation state across runs: a run
// that starts after a RUN_ERROR is dropped for consumers older than 0.0.59,
// which needs the stream's state on every run.
func TestStreamCarriesStateAcrossRuns(t *testing.T) {
	in := `data: {"type":"RUN_STARTED","threadId":"t","runId":"r1","protocolVersion":"1.0"}` + "\n\n" +
		`data: {"type":"RUN_ERROR","message":"boom"}` + "\n\n" +
		`data: {"type":"RUN_STARTED","threadId":"t","runId":"r2","protocolVersion":"1.0"}` + "\n\n" +
		`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r2"}` + "\n\n"
	out := string(replay(t, []byte(in), negotiate.MustParse("0.0.58"), negotiate.Version{}))
	if strings.Contains(out, `"r2"`) || !strings.Contains(out, "RUN_ERROR") {
		t.Fatalf("stream for 0.0.58: %q", out)
	}
}

// BenchmarkStreamTranslated is BenchmarkStreamPassThrough for a run the
// relay translates: a 1.0 stream for a 0.0.45 consumer, and a stream that
// declares nothing (a legacy producer) for a 1.0 consumer. Content events
// no step wants should cost about what they cost untranslated.
func BenchmarkStreamTranslated(b *testing.B) {
	legacy := bytes.Replace(testkit.BenchStream(1000, testkit.ContentEvent), []byte(`,"protocolVersion":"1.0"`), nil, 1)
	for _, tc := range []struct {
		name     string
		consumer negotiate.Version
		in       []byte
	}{
		{"1.0-to-0.0.45", negotiate.MustParse("0.0.45"), testkit.BenchStream(1000, testkit.ContentEvent)},
		{"legacy-to-1.0", negotiate.Current, legacy},
		{"1.0-to-0.0.45-subagents", negotiate.MustParse("0.0.45"), subagentStream(1000, 10)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			t := &Translator{}
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.in)))
			r := bytes.NewReader(tc.in)
			w := bufio.NewWriter(io.Discard)
			for b.Loop() {
				r.Reset(tc.in)
				st := t.NewStream(tc.consumer, negotiate.Version{}, w)
				pumpAll(b, st, r)
				if !st.Plan().Translate {
					b.Fatal("the run was not translated")
				}
				st.Close()
			}
		})
	}
}

// subagentStream is the bench's long workload in memory (bench/harness,
// translated case): a run whose one text message of n deltas sits inside a
// SUBAGENT_STARTED/FINISHED pair, every every-th delta tagged with the
// subagent's subagentRunId.
func subagentStream(n, every int) []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")
	b.WriteString(`data: {"type":"SUBAGENT_STARTED","subagentRunId":"sub-r-1","name":"researcher"}` + "\n\n")
	b.WriteString(`data: {"type":"TEXT_MESSAGE_START","messageId":"msg-r-2","role":"assistant"}` + "\n\n")
	for i := 1; i <= n; i++ {
		tag := ""
		if i%every == 0 {
			tag = `,"subagentRunId":"sub-r-1"`
		}
		fmt.Fprintf(&b, `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-r-2","delta":"lorem ipsum #%d:1764640000000000000#"%s}`+"\n\n", i, tag)
	}
	b.WriteString(`data: {"type":"TEXT_MESSAGE_END","messageId":"msg-r-2"}` + "\n\n")
	b.WriteString(`data: {"type":"SUBAGENT_FINISHED","subagentRunId":"sub-r-1","outcome":{"type":"success"}}` + "\n\n")
	b.WriteString(`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n\n")
	return b.Bytes()
}

// BenchmarkStreamLong is the bench's long workload in memory, one run of
// 10,000 content deltas inside a subagent pair, written by the relay's
// consumer writer (wire.ChunkWriter) to a connection that discards:
// relayed to a 1.0 consumer (passed through), and translated for 0.0.45,
// with no delta tagged and with one in ten tagged (the bench's translated
// case). A delta that needs no change should cost about what it costs
// passed through. Compare cpu-ns/event (the process's CPU, the collector's
// included) on a shared machine.
func BenchmarkStreamLong(b *testing.B) {
	for _, tc := range []struct {
		name     string
		consumer negotiate.Version
		every    int
	}{
		{"pass-through", negotiate.Current, 10},
		{"1.0-to-0.0.45", negotiate.MustParse("0.0.45"), 10001},
		{"1.0-to-0.0.45-tagged", negotiate.MustParse("0.0.45"), 10},
	} {
		in := subagentStream(10000, tc.every)
		b.Run(tc.name, func(b *testing.B) {
			t := &Translator{}
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			r := bytes.NewReader(in)
			var w wire.ChunkWriter
			cpu0 := testkit.CPUTime()
			for b.Loop() {
				r.Reset(in)
				w.Init(discardConn{}, true, 0)
				st := t.NewStream(tc.consumer, negotiate.Version{}, &w)
				pumpAll(b, st, r)
				if err := w.End(); err != nil {
					b.Fatal(err)
				}
				if st.Plan().Translate != (tc.consumer != negotiate.Current) {
					b.Fatal("translated:", st.Plan().Translate)
				}
				st.Close()
			}
			b.ReportMetric(float64(testkit.CPUTime()-cpu0)/float64(b.N)/10006, "cpu-ns/event")
		})
	}
}

// discardConn is a consumer's connection that takes every write whole,
// as one call when in pieces (wire.VecWriter, as the relay's sockets do).
type discardConn struct{ net.Conn } // nil: only the methods below are used

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) WriteVec(a, b, c, d []byte) (int, error) {
	return len(a) + len(b) + len(c) + len(d), nil
}
