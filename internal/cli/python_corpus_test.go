package cli

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

var updatePython = flag.Bool("update", false, "rewrite testdata/corpus/python.tsv with what the relay makes of the corpus's Python-framework streams")

// pythonCorpus names the recorded agents built on ag-ui-protocol and the
// release each ran. Source: namastexlabs/agui-benchmark, uv.lock at 81135dda
// (2026-02-03), the last lock before the runs were recorded (2026-02-05):
// one environment for every Python agent, with ag-ui-protocol 0.1.10 under
// pydantic-ai 1.31.0, ag-ui-langgraph 0.0.23, agno 2.4.2 and
// llama-index-protocols-ag-ui 0.2.3. ag2 is Python too, but its agent
// (ag2_agent/main.py) writes its events with json.dumps and imports no
// ag-ui-protocol: it is named by no release, and stays a producer of unknown
// release.
var pythonCorpus = []struct {
	prefix  string
	release negotiate.PyRelease
}{
	{"agno-", negotiate.PyRelease{Minor: 1, Patch: 10}},
	{"langgraph-", negotiate.PyRelease{Minor: 1, Patch: 10}},
	{"llamaindex-", negotiate.PyRelease{Minor: 1, Patch: 10}},
	{"pydantic-", negotiate.PyRelease{Minor: 1, Patch: 10}},
}

// dataFrames returns the data of an SSE stream's frames.
func dataFrames(stream []byte) [][]byte {
	var out [][]byte
	for _, f := range bytes.Split(stream, []byte("\n\n")) {
		for _, l := range bytes.Split(f, []byte("\n")) {
			if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
				out = append(out, bytes.TrimSpace(d))
			}
		}
	}
	return out
}

// verdicts counts the verdicts of each event judged against v, and the
// events a consumer of v fails the run on (malformed, or unrecognised and
// fatal).
func verdicts(v negotiate.Version, evs [][]byte) (counts [4]int, fatal int) {
	for _, ev := range evs {
		j := rules.JudgeEvent(v, ev)
		counts[j.Verdict]++
		for _, f := range j.Findings {
			if f.Verdict == rules.Malformed || (f.Verdict == rules.Unrecognised && f.Fatal) {
				fatal++
				break
			}
		}
	}
	return counts, fatal
}

func countsString(c [4]int) string {
	return fmt.Sprintf("%d accepted, %d translated, %d stripped, %d malformed", c[rules.Accepted], c[rules.Retired], c[rules.Unrecognised], c[rules.Malformed])
}

// TestPythonCorpus judges every recorded stream of a Python framework under
// the profile of the release it ran (negotiate.PyProfile.Events), and
// translates it as the relay does for a producer named by that release: for
// a 1.0 consumer (what is left must hold no retired shape and no more
// malformed events than the stream had for 1.0) and for a consumer of the
// release's own TypeScript release (still translated; nothing left that it
// fails on but what was malformed already). testdata/corpus/python.tsv holds
// the figures of every run (-update rewrites it).
func TestPythonCorpus(t *testing.T) {
	var rows []string
	runs, refusedRuns := 0, 0
	for _, pc := range pythonCorpus {
		prof, _ := negotiate.PyProfileOf(pc.release)
		dirs, _ := filepath.Glob(filepath.Join("testdata", "corpus", "agui-benchmark", pc.prefix+"*"))
		if len(dirs) == 0 {
			t.Fatalf("no recorded agent %s*", pc.prefix)
		}
		for _, dir := range dirs {
			files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
			for _, f := range files {
				runs++
				id := filepath.Base(dir) + "/" + strings.TrimSuffix(filepath.Base(f), ".sse")
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				in := dataFrames(raw)

				// The release's input rules against what the agent did with
				// the benchmark's request: where its models refuse it, the
				// agent answered no stream (the multi-turn prompt's content
				// is an object no release describes; pydantic says 422).
				// One more run is empty for another cause
				// (llamaindex-anthropic/thinking, a request every release
				// takes). The request's snake_case thread_id and run_id are
				// left aside: the Python models take them
				// (populate_by_name=True), the tables model only camelCase.
				req, err := os.ReadFile(strings.TrimSuffix(f, ".sse") + ".request.json")
				if err != nil {
					t.Fatal(err)
				}
				j, _ := rules.JudgePythonInput(pc.release, req)
				refused := ""
				for _, fd := range j.Findings {
					if (fd.Verdict == rules.Malformed || (fd.Verdict == rules.Unrecognised && fd.Fatal)) && fd.Pointer != "/threadId" && fd.Pointer != "/runId" {
						refused = fd.Rule + " at " + fd.Pointer
						break
					}
				}
				if refused != "" {
					refusedRuns++
					if len(in) != 0 {
						t.Errorf("%s: %s's rules refuse the request (%s), yet the agent streamed %d events", id, pc.release.Name(), refused, len(in))
					}
				}
				judged, _ := verdicts(prof.Events, in)
				in10, _ := verdicts(negotiate.Current, in)

				var out, warn bytes.Buffer
				if err := translateEvents(bytes.NewReader(raw), &out, &warn, negotiate.Current, prof.Events, pc.release, 10<<20); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				evs := dataFrames(out.Bytes())
				out10, _ := verdicts(negotiate.Current, evs)
				if out10[rules.Retired] != 0 {
					t.Errorf("%s: %d retired shapes reach a 1.0 consumer", id, out10[rules.Retired])
				}
				if out10[rules.Malformed] > in10[rules.Malformed] {
					t.Errorf("%s: %d malformed events for 1.0 after translation, %d before", id, out10[rules.Malformed], in10[rules.Malformed])
				}
				for _, ev := range evs {
					if string(rules.PeekType(ev)) == "RUN_STARTED" && !bytes.Contains(ev, []byte(`"protocolVersion":"1.0"`)) {
						t.Errorf("%s: a translated run does not declare 1.0: %s", id, ev)
					}
				}

				var own bytes.Buffer
				if err := translateEvents(bytes.NewReader(raw), &own, io.Discard, prof.Events, prof.Events, pc.release, 10<<20); err != nil {
					t.Fatal(err)
				}
				ownEvs := dataFrames(own.Bytes())
				_, fatalBefore := verdicts(prof.Events, in)
				_, fatalAfter := verdicts(prof.Events, ownEvs)
				inOwn, _ := verdicts(prof.Events, in)
				if fatalAfter > inOwn[rules.Malformed] || fatalAfter > fatalBefore {
					t.Errorf("%s: %d events %s fails the run on after translation (%d malformed, %d fatal before)", id, fatalAfter, prof.Events, inOwn[rules.Malformed], fatalBefore)
				}

				var lost []string
				for _, l := range strings.Split(warn.String(), "\n") {
					if s, ok := strings.CutPrefix(l, "warning: lost "); ok {
						lost = append(lost, s[:strings.Index(s, " (")])
					}
				}
				sort.Strings(lost)
				rows = append(rows, strings.Join([]string{id, pc.release.Name(), fmt.Sprint(len(in)),
					"as " + prof.Events.String() + ": " + countsString(judged),
					"for 1.0: " + countsString(out10), strings.Join(lost, ", ")}, "\t"))
			}
		}
	}
	if refusedRuns != 11 {
		t.Errorf("the Python rules refuse %d of the benchmark's requests; want its 11 multi-turn ones", refusedRuns)
	}
	if runs != 99 {
		t.Errorf("%d Python-framework runs in the corpus, want the 11 agents' 9 prompts", runs)
	}
	got := "run\trelease\tevents\tjudged under the release's profile\ttranslated for a 1.0 consumer, judged by 1.0\tlossy warnings\n" + strings.Join(rows, "\n") + "\n"
	const golden = "testdata/corpus/python.tsv"
	if *updatePython {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestPythonCorpus -update ./internal/cli writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s is not what the relay makes of the corpus now (go test -run TestPythonCorpus -update ./internal/cli rewrites it)", golden)
	}
}
