package rules

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// testdataPath returns the path of rel under the repository's testdata/
// (testdata/README.md says where its sets come from) and fails the test
// when it is not there.
func testdataPath(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "testdata", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test material missing: %v (testdata/README.md says how to restore it)", err)
	}
	return p
}

// wrap places a fixture document where the reference consumer met it: the
// draft's fixtures for sub-definitions are single objects, and VERDICTS.tsv
// locates them inside an event or a RunAgentInput.
func wrap(def string, doc []byte) []byte {
	d := string(doc)
	switch def {
	case "Interrupt":
		return []byte(`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[` + d + `]}}`)
	case "ResumeEntry":
		return []byte(`{"threadId":"t","runId":"r","messages":[],"resume":[` + d + `]}`)
	case "Tool":
		return []byte(`{"threadId":"t","runId":"r","messages":[],"tools":[` + d + `]}`)
	case "ToolMessage", "UserMessage":
		return []byte(`{"threadId":"t","runId":"r","messages":[` + d + `]}`)
	}
	return doc
}

// TestSpecDraftVerdicts checks every fixture document against the verdict
// of the reference 1.0 consumer.
func TestSpecDraftVerdicts(t *testing.T) {
	dir := testdataPath(t, "spec-draft")
	f, err := os.Open(filepath.Join(dir, "VERDICTS.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	n := 0
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 4 {
			t.Fatalf("VERDICTS.tsv: bad line %q", sc.Text())
		}
		name, kind, verdict, where := cols[0], cols[1], cols[2], cols[3]
		n++
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			doc := wrap(strings.SplitN(name, "/", 2)[0], raw)
			var j Judgement
			if kind == "input" {
				j = JudgeInput(negotiate.Current, doc)
			} else {
				j = JudgeEvent(negotiate.Current, doc)
			}
			// The reference client upgrades an outgoing binary part before
			// enforcing; a relay receiving it translates it too (fixtures
			// README), so it is a retired shape here, not stripped material.
			if name == "UserMessage/invalid/legacy-binary-part.json" {
				verdict = "translated"
			}
			// The same for the opaque values 0.0.x read as optional and the
			// Python SDK's encoder leaves out when None (the registry's
			// absent-means-null): a retired shape the relay upgrades to
			// null, where the reference consumer fails the run.
			switch name {
			case "CustomEvent/invalid/value-missing.json", "RawEvent/invalid/event-missing.json",
				"StateSnapshotEvent/invalid/snapshot-missing.json":
				verdict, where = "translated", "/"+strings.TrimSuffix(strings.Split(name, "/")[2], "-missing.json")
			}
			var ptrs []string
			if where != "" {
				ptrs = strings.Split(where, ",")
			}
			checkVerdict(t, j, verdict, ptrs)
		})
	}
	if n != 179 {
		t.Fatalf("VERDICTS.tsv lists %d documents, want 179", n)
	}
}

func checkVerdict(t *testing.T, j Judgement, verdict string, ptrs []string) {
	t.Helper()
	want := map[string]Verdict{"accepted": Accepted, "translated": Retired, "stripped": Unrecognised, "fatal": Malformed}[verdict]
	if j.Verdict != want {
		t.Fatalf("verdict %s, want %s (%s); findings %+v", j.Verdict, want, verdict, j.Findings)
	}
	if want == Accepted && j.Findings != nil {
		t.Fatalf("accepted with findings %+v", j.Findings)
	}
	for _, p := range ptrs {
		found := false
		for _, f := range j.Findings {
			if f.Pointer == p && f.Verdict == want {
				found = true
				if want == Unrecognised && f.Fatal {
					t.Errorf("stripped material at %s is fatal for 1.0", p)
				}
			}
		}
		if !found {
			t.Errorf("no %s finding at %q; findings %+v", want, p, j.Findings)
		}
	}
}
