package synth

import (
	"strings"
	"testing"
)

func TestParseStamp(t *testing.T) {
	for _, tc := range []struct {
		in      string
		seq, ns int64
		ok      bool
	}{
		{`{"delta":"hello #12:1700000000000000001#"}`, 12, 1700000000000000001, true},
		{`{"delta":"#0:5#"}`, 0, 5, true},
		{`{"delta":"no stamp"}`, 0, 0, false},
		{`{"delta":"#12#"}`, 0, 0, false},
		{`{"delta":"#12:#"}`, 0, 0, false},
		{`{"delta":"#:5#"}`, 0, 0, false},
		{`{"delta":"#1:5"}`, 0, 0, false},
	} {
		seq, ns, ok := ParseStamp([]byte(tc.in))
		if seq != tc.seq || ns != tc.ns || ok != tc.ok {
			t.Errorf("ParseStamp(%s) = %d, %d, %v; want %d, %d, %v", tc.in, seq, ns, ok, tc.seq, tc.ns, tc.ok)
		}
	}
}

// events renders a run of plan as event payloads.
func events(plan Plan, d Dialect) [][]byte {
	w := RunWriter{D: d, RunID: "r", Thread: "t"}
	var out [][]byte
	for i, k := range plan.Kinds {
		out = append(out, w.appendEvent(nil, k, int64(1000+i)))
	}
	return out
}

func TestRunCheckVerdicts(t *testing.T) {
	plan := NewPlan(Dialect10, 300)
	evs := events(plan, Dialect10)
	stamped := func() []int {
		var idx []int
		for i, k := range plan.Kinds {
			if k.Stamped() {
				idx = append(idx, i)
			}
		}
		return idx
	}()
	a, b := stamped[3], stamped[4]
	for _, tc := range []struct {
		name  string
		mut   func([][]byte) [][]byte
		exact bool
		want  string // substring of the error; "" for none
	}{
		{"complete", func(e [][]byte) [][]byte { return e }, true, ""},
		{"missing stamped", func(e [][]byte) [][]byte { return append(e[:a:a], e[a+1:]...) }, false, "missing"},
		{"duplicate", func(e [][]byte) [][]byte {
			return append(append(e[:a+1:a+1], e[a]), e[a+1:]...)
		}, false, "duplicated"},
		{"swapped", func(e [][]byte) [][]byte {
			c := append([][]byte{}, e...)
			c[a], c[b] = c[b], c[a]
			return c
		}, false, "out of order"},
		{"no terminal", func(e [][]byte) [][]byte { return e[:len(e)-1] }, false, "terminal"},
		{"no start", func(e [][]byte) [][]byte { return e[1:] }, false, "RUN_STARTED"},
		{"unstamped lost, exact", func(e [][]byte) [][]byte { return append(e[:1:1], e[2:]...) }, true, "events, want"},
		{"unstamped lost, translated", func(e [][]byte) [][]byte { return append(e[:1:1], e[2:]...) }, false, ""},
		{"event after the end", func(e [][]byte) [][]byte { return append(e, e[1]) }, false, "after the terminal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewRunCheck(plan, tc.exact)
			for _, ev := range tc.mut(append([][]byte{}, evs...)) {
				c.Event(ev)
			}
			err := c.Err()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
