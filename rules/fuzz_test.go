package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// seedFiles returns the contents of the files of testdata/dir matching
// pattern.
func seedFiles(f *testing.F, dir, pattern string) [][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", dir, pattern))
	var seeds [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// fuzzVersions are the versions the fuzzers judge for: the current one and
// the first and last of each legacy profile.
func fuzzVersions() []negotiate.Version {
	versions := []negotiate.Version{negotiate.Current}
	for _, p := range negotiate.Profiles {
		versions = append(versions, p.First, p.Last)
	}
	return versions
}

// FuzzJudgeEvent judges any bytes as an event for any version (issue #7).
// Properties: no panic; the same verdict twice; the verdict is the worst
// finding's; text that is not JSON, or nests deeper than MaxNesting, is
// malformed with a located finding; every malformed finding is fatal and
// has a pointer in RFC 6901 syntax. Seeds: the events of the repository's
// recorded streams. To fuzz:
//
//	go test -run '^$' -fuzz FuzzJudgeEvent -fuzztime 60s ./rules/
func FuzzJudgeEvent(f *testing.F) {
	for i, b := range seedFiles(f, "streams", "*.sse") {
		for line := range strings.SplitSeq(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add([]byte(data), byte(i))
			}
		}
	}
	f.Add([]byte(`{"type":"RUN_STARTED","type":"RUN_FINISHED"}`), byte(0))
	f.Add([]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\ud800"}`), byte(1))
	f.Add([]byte("[[[[[[[[[["), byte(2))
	versions := fuzzVersions()
	f.Fuzz(func(t *testing.T, ev []byte, vb byte) {
		v := versions[int(vb)%len(versions)]
		j := JudgeEvent(v, ev)
		again := JudgeEvent(v, ev)
		if j.Verdict != again.Verdict || len(j.Findings) != len(again.Findings) {
			t.Fatalf("judged twice: %v then %v", j, again)
		}
		worst := Accepted
		for _, fd := range j.Findings {
			worst = max(worst, fd.Verdict)
			if fd.Verdict == Malformed && !fd.Fatal {
				t.Errorf("malformed but not fatal: %+v", fd)
			}
			if fd.Pointer != "" && !validPointer(fd.Pointer) {
				t.Errorf("pointer %q", fd.Pointer)
			}
		}
		if worst != j.Verdict {
			t.Errorf("verdict %v, worst finding %v", j.Verdict, worst)
		}
		if !Valid(string(ev)) && (j.Verdict != Malformed || len(j.Findings) == 0) {
			t.Errorf("%q is not JSON, judged %v", ev, j)
		}
	})
}

// FuzzJudgeInput: the same for a RunAgentInput, which the relay judges
// before contacting the producer.
func FuzzJudgeInput(f *testing.F) {
	for i, b := range seedFiles(f, "golden-input", "*.txtar") {
		if _, rest, ok := strings.Cut(string(b), "-- input.json --\n"); ok {
			doc, _, _ := strings.Cut(rest, "\n-- ")
			f.Add([]byte(doc), byte(i))
		}
	}
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[],"forwardedProps":null}`), byte(0))
	versions := fuzzVersions()
	f.Fuzz(func(t *testing.T, in []byte, vb byte) {
		j := JudgeInput(versions[int(vb)%len(versions)], in)
		worst := Accepted
		for _, fd := range j.Findings {
			worst = max(worst, fd.Verdict)
			if fd.Pointer != "" && !validPointer(fd.Pointer) {
				t.Errorf("pointer %q", fd.Pointer)
			}
		}
		if worst != j.Verdict {
			t.Errorf("verdict %v, worst finding %v", j.Verdict, worst)
		}
		if !Valid(string(in)) && j.Verdict != Malformed {
			t.Errorf("%q is not JSON, judged %v", in, j)
		}
	})
}

func TestValidRefusesDeepNesting(t *testing.T) {
	ok := `{"a":` + strings.Repeat("[", MaxNesting-1) + strings.Repeat("]", MaxNesting-1) + `}`
	deep := `{"a":` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}`
	quoted := `{"a":"` + strings.Repeat("[", 3*MaxNesting) + `"}`
	if !Valid(ok) || Valid(deep) || !Valid(quoted) {
		t.Errorf("Valid: %v %v %v", Valid(ok), Valid(deep), Valid(quoted))
	}
	if j := JudgeEvent(negotiate.Current, []byte(deep)); j.Verdict != Malformed || j.Findings[0].Rule != "max-depth:10000" {
		t.Errorf("judged %+v", j)
	}
}
