package translate_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

var update = flag.Bool("update", false, "rewrite the golden archives under testdata/golden and testdata/golden-input with what the relay emits now")

// goldenTargets are the consumer versions every archive is translated for:
// one per legacy profile the relay serves, and 1.0.
var goldenTargets = []string{"1.0", "0.0.59", "0.0.54", "0.0.45", "0.0.41", "0.0.37"}

// archive is a txtar-style file: a comment (options, one "key: value" a
// line), then sections introduced by "-- name --" lines.
type archive struct {
	comment  string
	names    []string
	sections map[string]string
}

func parseArchive(b string) archive {
	a := archive{sections: map[string]string{}}
	cur := ""
	var body strings.Builder
	flush := func() {
		if cur == "" {
			a.comment = body.String()
		} else {
			a.sections[cur] = body.String()
			a.names = append(a.names, cur)
		}
		body.Reset()
	}
	for line := range strings.SplitAfterSeq(b, "\n") {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			cur = t[3 : len(t)-3]
			continue
		}
		body.WriteString(line)
	}
	flush()
	return a
}

func (a archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, n := range a.names {
		fmt.Fprintf(&b, "-- %s --\n%s", n, a.sections[n])
	}
	return b.String()
}

func (a *archive) set(name, body string) {
	if _, ok := a.sections[name]; !ok {
		a.names = append(a.names, name)
	}
	a.sections[name] = body
}

func (a archive) option(key string) string {
	for line := range strings.SplitSeq(a.comment, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// collector keeps the warnings of a translation, in the order reported.
type collector struct {
	mu    sync.Mutex
	lines []string
}

func (c *collector) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}
func (c *collector) Warn(r *translate.Run, w translate.Warning) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, fmt.Sprintf("%s x%d (%s)", w.Shape, w.Count, w.Step))
}

// relayed is one translation of an input stream: the output, and for each
// input frame the output events it produced.
type relayed struct {
	out      []byte
	perFrame [][][]byte // input frame → output events (data)
	inputs   [][]byte   // input frames' data (nil for frames without data)
	plans    []negotiate.Plan
	warnings []string
}

// relayStream runs input through event.Stream exactly as the live relay
// does, frame by frame, attributing what comes out to the frame that caused
// it.
func relayStream(t *testing.T, input []byte, consumer, producer negotiate.Version) relayed {
	t.Helper()
	var res relayed
	obs := &collector{}
	tr := &event.Translator{Observer: obs}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	st := tr.NewStream(consumer, producer, w)
	st.OnPlan = func(p negotiate.Plan) { res.plans = append(res.plans, p) }
	sc := event.NewScanner(bytes.NewReader(input), 0)
	for {
		f, err := sc.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("scanning: %v", err)
		}
		var data []byte
		if f.HasData() {
			data = bytes.Clone(f.Data)
		}
		before := buf.Len() + w.Buffered()
		if err := st.Frame(&f); err != nil {
			t.Fatalf("frame: %v", err)
		}
		w.Flush()
		res.inputs = append(res.inputs, data)
		res.perFrame = append(res.perFrame, eventsOf(t, buf.Bytes()[before:]))
	}
	st.Close()
	w.Flush()
	res.out = buf.Bytes()
	res.warnings = obs.lines
	return res
}

// eventsOf splits emitted SSE into the events' data.
func eventsOf(t *testing.T, b []byte) [][]byte {
	var evs [][]byte
	sc := event.NewScanner(bytes.NewReader(b), 0)
	for {
		f, err := sc.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("re-scanning output: %v", err)
		}
		if f.HasData() {
			evs = append(evs, bytes.Clone(f.Data))
		}
	}
}

// runArchives runs a subtest for each archive under testdata/dir, giving
// do the archive and its section named input; with -update it writes the
// archive back afterwards.
func runArchives(t *testing.T, dir, input string, do func(t *testing.T, a *archive, input string)) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no archives under testdata/%s: %v", dir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(string(raw))
			in, ok := a.sections[input]
			if !ok {
				t.Fatalf("no %s section", input)
			}
			do(t, &a, in)
			if *update {
				if err := os.WriteFile(file, []byte(a.format()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// compare checks what target got, out and its warnings, against the
// sections section and warnings.<target>; with -update it sets them instead.
func (a *archive) compare(t *testing.T, target, section string, out []byte, warnings []string) {
	t.Helper()
	warn := strings.Join(warnings, "\n")
	if warn != "" {
		warn += "\n"
	}
	if *update {
		a.set(section, string(out))
		a.set("warnings."+target, warn)
		return
	}
	if got, want := string(out), a.sections[section]; got != want {
		t.Errorf("%s: output differs (run with -update to accept):\n--- got\n%s--- want\n%s", target, got, want)
	}
	if want := a.sections["warnings."+target]; warn != want {
		t.Errorf("%s: warnings differ:\n--- got\n%s--- want\n%s", target, warn, want)
	}
}

func TestGolden(t *testing.T) {
	runArchives(t, "golden", "input.sse", func(t *testing.T, a *archive, input string) {
		var producer negotiate.Version
		if f := a.option("from"); f != "" {
			producer = negotiate.MustParse(f)
		}
		for _, target := range goldenTargets {
			consumer := negotiate.MustParse(target)
			res := relayStream(t, []byte(input), consumer, producer)
			checkProperties(t, target, res, consumer)
			a.compare(t, target, target+".sse", res.out, res.warnings)
		}
	})
}

// checkProperties asserts what every translation owes, whatever the goldens
// say: valid JSON out; no id the producer did not send in the event or
// before it (except ids derived for retired shapes); events in input order; the outcome kept or refused
// as documented; idempotence; untranslated runs byte for byte.
func checkProperties(t *testing.T, target string, res relayed, consumer negotiate.Version) {
	t.Helper()
	translated := false
	for _, p := range res.plans {
		translated = translated || p.Translate
	}
	// An id-less chunk continuation may be given the id of the stream it
	// continues (subagent lanes), an id the producer sent before.
	srcIDs := map[string]bool{}
	for i, evs := range res.perFrame {
		src := res.inputs[i]
		maps.Copy(srcIDs, ids(src))
		for _, ev := range evs {
			if !gjson.ValidBytes(ev) {
				t.Errorf("%s: invalid JSON out: %s", target, ev)
				continue
			}
			for id := range ids(ev) {
				if !srcIDs[id] && !strings.HasPrefix(id, "reasoning-") {
					t.Errorf("%s: id %q is not the producer's (from %s): %s", target, id, src, ev)
				}
			}
		}
		checkOutcome(t, target, src, evs)
	}
	if !translated && !bytes.Equal(res.out, []byte(joinInput(res))) {
		// Every run passed untranslated: the bytes must be the input's,
		// re-framed only where the framing was not canonical.
		t.Errorf("%s: an untranslated stream changed", target)
	}
	// Idempotence: the chain applied again to what it emitted changes
	// nothing.
	chain := translate.EventChain(consumer, translate.Registry())
	var cr *translate.ChainRun
	var again [][]byte
	var all [][]byte
	run := -1
	for i, evs := range res.perFrame {
		if i == 0 || string(rules.PeekType(res.inputs[i])) == "RUN_STARTED" {
			run++ // the relay decides each run at its RUN_STARTED
		}
		if run < len(res.plans) && !res.plans[run].Translate {
			continue // passed through as the producer sent it, nulls and all
		}
		for _, ev := range evs {
			if cr == nil || string(rules.PeekType(ev)) == "RUN_STARTED" {
				r := translate.NewRun(translate.Events, negotiate.Version{}, consumer, nil)
				cr = chain.Start(r, negotiate.Plan{}, func(b, _ []byte) { again = append(again, bytes.Clone(b)) })
			}
			cr.Push(ev)
			all = append(all, ev)
		}
	}
	if !slices.EqualFunc(all, again, bytes.Equal) {
		t.Errorf("%s: not idempotent: translating the output again gave\n%s", target, bytes.Join(again, []byte("\n")))
	}
}

// joinInput is the input as the relay writes a pass-through stream.
func joinInput(res relayed) string {
	var b []byte
	for _, d := range res.inputs {
		if d != nil {
			b = event.AppendFrame(b, nil, d)
		}
	}
	return string(b)
}

// checkOutcome: a RUN_FINISHED keeps its outcome, or is refused with the
// documented RUN_ERROR; an unknown outcome type may be removed (read as
// success, as 1.0 reads it); a run dropped after an error emits nothing.
func checkOutcome(t *testing.T, target string, src []byte, evs [][]byte) {
	t.Helper()
	if string(rules.PeekType(src)) != "RUN_FINISHED" || len(evs) == 0 {
		return
	}
	if len(evs) != 1 {
		t.Errorf("%s: RUN_FINISHED became %d events", target, len(evs))
		return
	}
	inType := translate.Get(src, "outcome.type").Str
	out := evs[0]
	switch string(rules.PeekType(out)) {
	case "RUN_FINISHED":
		outType := translate.Get(out, "outcome.type").Str
		norm := func(s string) string {
			if s == "" {
				return "success"
			}
			return s
		}
		known := map[string]bool{"": true, "success": true, "interrupt": true, "cancelled": true}
		if norm(inType) != norm(outType) && !(known[inType] == false && outType == "") {
			t.Errorf("%s: outcome %q became %q", target, inType, outType)
		}
	case "RUN_ERROR":
		code := translate.Get(out, "code").Str
		msg := translate.Get(out, "message").Str
		want := map[string]string{"cancelled": "cancelled", "interrupt": "interrupted"}[inType]
		if want == "" || code != want || !strings.HasPrefix(msg, "agui-relay: ") || !strings.Contains(msg, "upgrade to") {
			t.Errorf("%s: outcome %q refused as %s", target, inType, out)
		}
	default:
		t.Errorf("%s: RUN_FINISHED became %s", target, out)
	}
}

// ids collects every string value of a member named id or *Id, at any
// depth: what a translation must never change.
func ids(ev []byte) map[string]bool {
	set := map[string]bool{}
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		v.ForEach(func(k, x gjson.Result) bool {
			if k.Type == gjson.String && (k.Str == "id" || strings.HasSuffix(k.Str, "Id")) && x.Type == gjson.String {
				set[x.Str] = true
			}
			if x.IsObject() || x.IsArray() {
				walk(x)
			}
			return true
		})
	}
	walk(gjson.ParseBytes(ev))
	return set
}
