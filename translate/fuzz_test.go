package translate_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Fuzz targets for the event and input translations (issue #7). Their seeds
// are the repository's recorded streams and inputs (plus the corpus under
// testdata/fuzz); plain go test runs the seeds. To fuzz:
//
//	go test -run '^$' -fuzz FuzzEventTranslation -fuzztime 60s ./translate/
//	go test -run '^$' -fuzz FuzzInputTranslation -fuzztime 60s ./translate/

// fuzzVersions are the versions a fuzzed byte picks from: the consumer
// targets of the goldens, and the producers the recordings speak (zero: a
// producer that declares its version itself, or predates the field).
var fuzzVersions = append([]string{""}, goldenTargets...)

func fuzzVersion(b byte) negotiate.Version {
	if s := fuzzVersions[int(b)%len(fuzzVersions)]; s != "" {
		return negotiate.MustParse(s)
	}
	return negotiate.Version{}
}

// seedFiles returns the sections named like want (".sse" or ".json") of
// the repository's golden archives, and the files of dir with that suffix.
func seedFiles(f *testing.F, section string, dirs ...string) [][]byte {
	var seeds [][]byte
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			switch {
			case strings.HasSuffix(file, ".txtar"):
				a := parseArchive(string(b))
				for _, n := range a.names {
					if strings.HasSuffix(n, section) {
						seeds = append(seeds, []byte(a.sections[n]))
					}
				}
			case strings.HasSuffix(file, section):
				seeds = append(seeds, b)
			}
		}
	}
	if len(seeds) == 0 {
		f.Fatal("no seeds in testdata")
	}
	return seeds
}

// FuzzEventTranslation runs any byte stream through event.Stream, as the
// live relay does, for any pair of versions. Properties: no panic; a
// stream no run of which is translated comes out as it went in (re-framed
// only where the framing was not canonical); no id the producer did not
// send in the event or before it (but those derived for retired shapes);
// events that come out unchanged keep their order; and the translation agrees with the judge:
// an event that is not JSON is passed on byte for byte, and one that
// rules.JudgeEvent finds malformed both for the current version and for
// the consumer's (not merely retired or unrecognised) is never repaired.
func FuzzEventTranslation(f *testing.F) {
	for i, s := range seedFiles(f, ".sse", "golden", "streams", "streams/eras") {
		f.Add(s, byte(i), byte(i/len(fuzzVersions)))
	}
	f.Add([]byte(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}`+"\n\n"+`data: {"type":"THINKING_START","title":`+"\n\n"), byte(1), byte(0))
	f.Add([]byte("\uFEFF\uFEFFdata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"), byte(0), byte(0))
	f.Fuzz(func(t *testing.T, stream []byte, consumerB, producerB byte) {
		consumer := fuzzVersion(consumerB)
		if consumer.IsZero() {
			consumer = negotiate.Current
		}
		producer := fuzzVersion(producerB)
		res := relayStream(t, stream, consumer, producer)

		translated := false
		for _, p := range res.plans {
			translated = translated || p.Translate
		}
		if want := passThrough(t, stream); !translated && !bytes.Equal(res.out, want) {
			t.Fatalf("untranslated stream changed:\n in %q\nout %q", want, res.out)
		}
		lastSame := -1
		used := make([]bool, len(res.inputs))
		// The ids the producer sent so far: an id-less chunk continuation
		// may be given the id of the stream it continues (subagent lanes).
		srcIDs := map[string]bool{}
		for i, evs := range res.perFrame {
			src := res.inputs[i]
			if src == nil {
				continue
			}
			// The judge and the translation agree on what is malformed:
			// not JSON, passed on as it came; malformed, passed on as it
			// came or still malformed for the consumer (RUN_STARTED gets its
			// declaration all the same), never repaired.
			if !rules.Valid(string(src)) {
				if len(evs) != 1 || !bytes.Equal(evs[0], src) {
					t.Fatalf("event %q, not JSON, came out as %q", src, evs)
				}
				used[i], lastSame = true, i
				continue
			}
			// Malformed for the current version and for the consumer's own
			// release: a value only 1.0 reads (and the consumer strips or
			// has removed for it as unknown) is not the consumer's to find
			// malformed, and a 1.0 shape an old release cannot read is
			// translated, not repaired.
			// An event passed on as it came may follow what the stream's state
			// owes before it (the END of a chunk stream it closes): those
			// are the stream's, not a repair of it.
			passed := len(evs) > 0 && bytes.Equal(evs[len(evs)-1], src)
			if !passed && rules.JudgeEvent(negotiate.Current, src).Verdict == rules.Malformed &&
				rules.JudgeEvent(consumer, src).Verdict == rules.Malformed {
				for _, ev := range evs {
					if !bytes.Equal(ev, src) && !failsRun(consumer, ev) && !refusal(consumer, src, ev) {
						t.Fatalf("malformed event %q was repaired into %q", src, ev)
					}
				}
			}
			maps.Copy(srcIDs, ids(src))
			for _, ev := range evs {
				if !gjson.ValidBytes(ev) {
					t.Fatalf("valid event %q came out as invalid JSON %q", src, ev)
				}
				for id := range ids(ev) {
					if !srcIDs[id] && !strings.HasPrefix(id, "reasoning-") {
						t.Fatalf("id %q is not the producer's (from %q): %q", id, src, ev)
					}
				}
			}
			// Events passed on unchanged come out in input order: each is
			// matched to the input it came out for when it is that one,
			// else to the earliest identical input not matched yet (an
			// earlier identical input may have come out rewritten).
			for _, ev := range evs {
				j := slices.IndexFunc(res.inputs[:i+1], func(in []byte) bool { return in != nil && bytes.Equal(in, ev) })
				if !used[i] && bytes.Equal(src, ev) {
					j = i
				}
				for j >= 0 && used[j] {
					k := slices.IndexFunc(res.inputs[j+1:i+1], func(in []byte) bool { return in != nil && bytes.Equal(in, ev) })
					if k < 0 {
						j = -1
						break
					}
					j += 1 + k
				}
				if j < 0 {
					continue // a new or rewritten event
				}
				if j < lastSame {
					t.Fatalf("event %q came out after %q, which the producer sent later", ev, res.inputs[lastSame])
				}
				used[j], lastSame = true, j
			}
		}
	})
}

// failsRun reports whether a consumer of v fails the whole run on ev: it is
// malformed for it, or carries material it rejects (a part type it does not
// know). A repair is an output the consumer would accept.
func failsRun(v negotiate.Version, ev []byte) bool {
	for _, f := range rules.JudgeEvent(v, ev).Findings {
		if f.Fatal {
			return true
		}
	}
	return false
}

// refusal reports whether ev is the RUN_ERROR that refuses src, a
// RUN_FINISHED whose outcome the consumer cannot represent
// (cancelled-outcome, interrupt-outcome), where the consumer would not fail
// the run on src itself: src's defects lie only in material the consumer's
// release strips (or are duplicate keys, which its JSON.parse resolves), so
// passed on it would read as a success. That refusal keeps the outcome; it
// repairs nothing. An event the consumer rejects is never refused.
func refusal(consumer negotiate.Version, src, ev []byte) bool {
	if gjson.GetBytes(src, "type").Str != "RUN_FINISHED" || gjson.GetBytes(ev, "type").Str != "RUN_ERROR" {
		return false
	}
	if c := gjson.GetBytes(ev, "code").Str; c != "cancelled" && c != "interrupted" {
		return false
	}
	for _, f := range rules.JudgeEvent(consumer, src).Findings {
		if f.Verdict == rules.Malformed && f.Rule != "duplicate-key" {
			return false
		}
	}
	return true
}

// passThrough is what the relay writes for a stream it does not translate:
// every frame as it came when its framing is canonical, re-framed
// otherwise, comments and fields included; a byte-order mark of its own
// first when the output would begin with U+FEFF (event.Stream), which the
// consumer strips instead of the first frame's.
func passThrough(t *testing.T, stream []byte) []byte {
	var out []byte
	sc := event.NewScanner(bytes.NewReader(stream), 0)
	for {
		f, err := sc.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("scanning: %v", err)
		}
		var frame []byte
		switch {
		case f.Canonical:
			frame = f.Raw
		case f.HasData():
			frame = event.AppendFrame(nil, f.Fields, f.Data)
		default:
			frame = append(bytes.Clone(f.Fields), '\n')
		}
		if len(out) == 0 && bytes.HasPrefix(frame, []byte("\uFEFF")) {
			out = append(out, "\uFEFF"...)
		}
		out = append(out, frame...)
	}
}

// checkUntranslatedInput checks an input the plan forwards untranslated:
// byte for byte, but for its activity messages, which never reach the
// producer whatever the versions (spec 003): those members of messages are
// removed, and nothing else changes.
func checkUntranslatedInput(t *testing.T, in, out []byte) {
	t.Helper()
	msgs := translate.Sub(translate.Root(in), "messages")
	if !rules.Valid(string(in)) || !gjson.ParseBytes(in).IsObject() || !msgs.Exists() {
		if !bytes.Equal(out, in) {
			t.Fatalf("untranslated input changed: %q", out)
		}
		return
	}
	var want, got []string
	dropped := false
	for _, it := range translate.Items(msgs, nil) {
		if translate.Sub(it.Value, "role").Str == "activity" {
			dropped = true
			continue
		}
		want = append(want, it.Key.Raw+":"+it.Value.Raw)
	}
	if !dropped {
		if !bytes.Equal(out, in) {
			t.Fatalf("untranslated input without activity messages changed: %q", out)
		}
		return
	}
	outMsgs := translate.Sub(translate.Root(out), "messages")
	for _, it := range translate.Items(outMsgs, nil) {
		got = append(got, it.Key.Raw+":"+it.Value.Raw)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q became %q, want %q", msgs.Raw, outMsgs.Raw, want)
	}
	if !bytes.Equal(in[:msgs.Index], out[:outMsgs.Index]) ||
		!bytes.Equal(in[msgs.Index+len(msgs.Raw):], out[outMsgs.Index+len(outMsgs.Raw):]) {
		t.Fatalf("untranslated input changed outside its messages: %q became %q", in, out)
	}
}

// FuzzInputTranslation shapes any body as a RunAgentInput for any pair of
// versions. Properties: no panic; an input not translated is returned
// byte for byte but for its activity messages (checkUntranslatedInput), and
// as itself with no warning when InputUnchanged says so;
// forwardedProps reaches the producer byte for byte; the
// run's ids are kept, and the message ids that remain keep their order.
func FuzzInputTranslation(f *testing.F) {
	for i, s := range seedFiles(f, ".json", "golden-input") {
		f.Add(s, byte(i), byte(i+3))
	}
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"binary","mimeType":"a/b","data":"x"}]}],"forwardedProps":null}`), byte(4), byte(0))
	f.Fuzz(func(t *testing.T, in []byte, consumerB, producerB byte) {
		consumer := fuzzVersion(consumerB)
		if consumer.IsZero() {
			consumer = negotiate.Current
		}
		plan := negotiate.DecideInput(consumer, fuzzVersion(producerB))
		orig := bytes.Clone(in)
		out, run := translate.TranslateInput(plan, in, nil)
		if translate.InputUnchanged(plan, in) && (len(in) > 0 && &out[0] != &in[0] || len(out) != len(in) || len(run.Warnings()) > 0) {
			t.Fatalf("InputUnchanged, yet %q became %q with %d warnings", in, out, len(run.Warnings()))
		}
		run.Finish()
		if !bytes.Equal(in, orig) {
			t.Fatal("the input was modified in place")
		}
		if !plan.Translate {
			checkUntranslatedInput(t, in, out)
		}
		if !rules.Valid(string(in)) || !gjson.ParseBytes(in).IsObject() {
			return // refused before translation by the relay; no panic is all
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("valid input %q became invalid %q", in, out)
		}
		if a, b := gjson.GetBytes(in, "forwardedProps"), gjson.GetBytes(out, "forwardedProps"); a.Raw != b.Raw {
			t.Fatalf("forwardedProps %q became %q", a.Raw, b.Raw)
		}
		for _, k := range []string{"threadId", "runId"} {
			if a, b := gjson.GetBytes(in, k), gjson.GetBytes(out, k); a.Raw != b.Raw {
				t.Fatalf("%s %q became %q", k, a.Raw, b.Raw)
			}
		}
		msgIDs := func(doc []byte) []string {
			var out []string
			gjson.GetBytes(doc, "messages").ForEach(func(_, m gjson.Result) bool {
				if id := m.Get("id"); id.Type == gjson.String {
					out = append(out, id.Str)
				}
				return true
			})
			return out
		}
		src, got := msgIDs(in), msgIDs(out)
		i := 0
		for _, id := range got {
			for i < len(src) && src[i] != id {
				i++
			}
			if i == len(src) {
				t.Fatalf("message ids %q became %q", src, got)
			}
			i++
		}
	})
}
