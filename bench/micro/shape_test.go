package micro

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/agui-relay/agui-relay/bench/naive"
	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"

	"github.com/agui-relay/agui-relay/internal/synth"
)

type shapeCase struct {
	name     string
	dialect  synth.Dialect
	consumer string // "" is current
	mode     naive.Mode
}

var shapeCases = []shapeCase{
	{"pass-through", synth.Dialect10, "", naive.None},
	{"1.0→0.0.45", synth.Dialect10, "0.0.45", naive.Down},
	{"legacy→1.0", synth.DialectLegacy, "", naive.Up},
	{"thinking→1.0", synth.DialectThinking, "", naive.Up},
}

// recording renders one run of n events as the producer sends it.
func recording(d synth.Dialect, n int) ([]byte, synth.Plan) {
	plan := synth.NewPlan(d, n)
	w := synth.RunWriter{D: d, RunID: "run-1", Thread: "thread-1"}
	var b []byte
	for i, k := range plan.Kinds {
		b = w.AppendFrame(b, k, int64(1_700_000_000_000_000_000+i))
	}
	return b, plan
}

func consumer(t testing.TB, s string) negotiate.Version {
	if s == "" {
		return negotiate.Current // what the relay decides for a consumer that declares nothing
	}
	v, err := negotiate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func shapeRelay(t testing.TB, tr *event.Translator, c negotiate.Version, in []byte, w *bufio.Writer) {
	sc := event.NewScanner(bytes.NewReader(in), 0)
	st := tr.NewStream(c, negotiate.Version{}, w)
	for {
		f, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Frame(&f); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	w.Flush()
}

func shapeNaive(t testing.TB, m naive.Mode, in []byte, w *bufio.Writer) {
	sh := &naive.Shaper{Mode: m}
	if err := sh.Copy(bufio.NewReaderSize(bytes.NewReader(in), 64<<10), w, nil); err != nil {
		t.Fatal(err)
	}
	w.Flush()
}

// TestShapesKeepTheStamps checks that both shapers deliver every stamped
// event in order, so that the benchmarks below measure complete work.
func TestShapesKeepTheStamps(t *testing.T) {
	for _, c := range shapeCases {
		in, plan := recording(c.dialect, 1000)
		for name, shape := range map[string]func(*bufio.Writer){
			"agui-relay": func(w *bufio.Writer) { shapeRelay(t, &event.Translator{}, consumer(t, c.consumer), in, w) },
			"naive":      func(w *bufio.Writer) { shapeNaive(t, c.mode, in, w) },
		} {
			var out bytes.Buffer
			shape(bufio.NewWriter(&out))
			chk := synth.NewRunCheck(plan, c.mode == naive.None)
			if err := event.NewScanner(nil, 0).Push(out.Bytes(), func(f event.Frame) {
				if f.HasData() {
					chk.Event(f.Data)
				}
			}); err != nil {
				t.Fatal(err)
			}
			if err := chk.Err(); err != nil {
				t.Errorf("%s, %s: %v", c.name, name, err)
			}
			translated := !bytes.Equal(out.Bytes(), in)
			if name == "agui-relay" && translated != (c.mode != naive.None) {
				t.Errorf("%s, agui-relay: output differs from input: %v", c.name, translated)
			}
		}
	}
}

// BenchmarkShape reports ns per event of shaping a 1000-event run in
// memory: agui-relay's scanner and Stream against decode/re-encode.
func BenchmarkShape(b *testing.B) {
	for _, c := range shapeCases {
		in, plan := recording(c.dialect, 1000)
		events := float64(len(plan.Kinds))
		w := bufio.NewWriterSize(io.Discard, 32<<10)
		b.Run(c.name+"/agui-relay", func(b *testing.B) {
			tr := &event.Translator{}
			v := consumer(b, c.consumer)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				shapeRelay(b, tr, v, in, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
		})
		b.Run(c.name+"/naive", func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				shapeNaive(b, c.mode, in, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
		})
	}
}
