//go:build integration

package conformance

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type corpusRun struct {
	id      string // <agent>/<prompt>
	request map[string]any
}

func loadCorpus(t *testing.T) []corpusRun {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*", "*.sse"))
	if len(files) == 0 {
		t.Fatalf("no corpus streams under %s (set AGUI_CORPUS_DIR)", corpusDir)
	}
	var out []corpusRun
	for _, f := range files {
		id := strings.TrimSuffix(strings.TrimPrefix(f, corpusDir+string(filepath.Separator)), ".sse")
		r := corpusRun{id: filepath.ToSlash(id), request: map[string]any{}}
		if b, err := os.ReadFile(strings.TrimSuffix(f, ".sse") + ".request.json"); err == nil {
			_ = json.Unmarshal(b, &r.request)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// corpusCase is the request the benchmark client sent, made by a published
// client: its history, ids, tools, context, state and forwardedProps.
func corpusCase(base string, r corpusRun, tag string) Case {
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := r.request[k].(string); ok {
				return s
			}
		}
		return ""
	}
	agent := map[string]any{"threadId": str("threadId", "thread_id")}
	// the benchmark's multi-turn requests carry a content object no release
	// of RunAgentInput describes (the recorder's own script); a published
	// client refuses to send it, so those messages stay out of the history
	var msgs []any
	for _, m := range asSlice(r.request["messages"]) {
		if mm, ok := m.(map[string]any); ok {
			if _, ok := mm["content"].(string); ok {
				msgs = append(msgs, mm)
			}
		}
	}
	if msgs != nil {
		agent["initialMessages"] = msgs
	}
	if s, ok := r.request["state"]; ok && s != nil {
		agent["initialState"] = s
	}
	params := map[string]any{"runId": str("runId", "run_id")}
	for _, k := range []string{"tools", "context", "forwardedProps"} {
		if v, ok := r.request[k]; ok && v != nil {
			params[k] = v
		}
	}
	return Case{Name: r.id, URL: base + "/corpus/" + r.id + "?route=" + tag, Agent: agent, Params: params, TimeoutMs: 15000}
}

// TestCorpus replays the 171 recorded real-producer streams. Through the
// relay, a legacy consumer must resolve every run the 1.0 consumer resolves
// directly, and the 1.0 consumer must resolve every run it resolves directly
// (so no fewer). Runs that fail directly because the producer is at fault are
// not repaired, but `agui-relay check` must name the fault.
func TestCorpus(t *testing.T) {
	requireSetup(t)
	runs := loadCorpus(t)
	producer := startProducer(t)
	type route struct {
		consumer string
		relayed  bool
	}
	routes := []route{{"1.0.0", false}, {"0.0.52", false}, {"1.0.0", true}, {"0.0.52", true}, {"0.0.40", true}}
	resolved := make([]map[string]Outcome, len(routes))
	t.Run("routes", func(t *testing.T) {
		for i, rt := range routes {
			t.Run(fmt.Sprintf("%s-relayed=%v", rt.consumer, rt.relayed), func(t *testing.T) {
				t.Parallel()
				base, tag := producer.URL, rt.consumer+"-direct"
				if rt.relayed {
					var flags []string
					if rt.consumer != "1.0.0" {
						flags = []string{"--consumer-version", rt.consumer}
					}
					base, tag = startRelay(t, producer.URL, flags...).URL, rt.consumer+"-relay"
				}
				cases := make([]Case, len(runs))
				for j, r := range runs {
					cases[j] = corpusCase(base, r, tag)
				}
				outs := runClient(t, rt.consumer, cases)
				m := map[string]Outcome{}
				for _, o := range outs {
					m[o.Name] = o
				}
				resolved[i] = m
			})
		}
	})
	if resolved[0] == nil {
		return // the direct 1.0 reading is the baseline of every check
	}
	count := func(m map[string]Outcome) int {
		n := 0
		for _, o := range m {
			if o.Resolved {
				n++
			}
		}
		return n
	}
	direct1, direct52 := resolved[0], resolved[1]
	fmt.Printf("corpus: %d runs; directly 1.0.0 resolves %d, 0.0.52 resolves %d\n", len(runs), count(direct1), count(direct52))
	if resolved[1] != nil {
		t.Run("consumers-file", func(t *testing.T) { checkConsumersFile(t, runs, direct1, direct52) })
	}
	for i, rt := range routes {
		if !rt.relayed || resolved[i] == nil {
			continue
		}
		var reasons []string
		for _, r := range runs {
			if direct1[r.id].Resolved && !resolved[i][r.id].Resolved {
				reasons = append(reasons, fmt.Sprintf("%s resolves directly on 1.0.0 but not through the relay on %s: %s",
					r.id, rt.consumer, firstLine(resolved[i][r.id].Error)))
			}
		}
		fmt.Printf("corpus: through the relay %s resolves %d of %d (1.0.0 directly: %d)\n", rt.consumer, count(resolved[i]), len(runs), count(direct1))
		if count(resolved[i]) < count(direct1) && len(reasons) == 0 {
			reasons = append(reasons, fmt.Sprintf("resolves %d runs, fewer than 1.0.0 directly (%d)", count(resolved[i]), count(direct1)))
		}
		reportVia(t, rt.consumer, "corpus", "relay", reasons)
	}
	t.Run("check-names-faults", func(t *testing.T) {
		requireRelay(t)
		var reasons []string
		for _, r := range runs {
			if direct1[r.id].Resolved {
				continue
			}
			if why := checkNamesFault(r.id, direct1[r.id].Error); why != "" {
				reasons = append(reasons, why)
			}
		}
		reportVia(t, "check", "corpus-faults", "check", reasons)
	})
}

// consumersFile records, run by run, what the published consumers make of
// the corpus directly, without a relay; internal/cli/cmd_check_test.go holds
// `agui-relay check` to it. TestCorpus holds it to what the consumers do now
// and rewrites it with -update.
var (
	consumersFile   = filepath.Join("..", "testdata", "corpus", "consumers.tsv")
	updateConsumers = flag.Bool("update", false, "rewrite testdata/corpus/consumers.tsv with what the consumers make of the corpus directly")
)

// consumerVerdict is a run's outcome in consumers.tsv: resolved, warned
// (resolved, with a warning of the client) or rejected.
func consumerVerdict(o Outcome) string {
	switch {
	case !o.Resolved:
		return "rejected"
	case len(o.Warnings) > 0:
		return "warned"
	}
	return "resolved"
}

func checkConsumersFile(t *testing.T, runs []corpusRun, direct1, direct52 map[string]Outcome) {
	var b strings.Builder
	b.WriteString("run\tclient-1.0.0\tclient-0.0.52\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", r.id, consumerVerdict(direct1[r.id]), consumerVerdict(direct52[r.id]))
	}
	if *updateConsumers {
		if err := os.WriteFile(consumersFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(consumersFile)
	if err != nil {
		t.Fatalf("test material missing: %v (testdata/README.md says how to restore it)", err)
	}
	if string(want) != b.String() {
		t.Errorf("the consumers no longer do with the corpus what %s records (go test ./conformance -run TestCorpus -update rewrites it):\n%s",
			consumersFile, lineDiff(string(want), b.String()))
	}
}

// lineDiff lists the lines of want missing from got (-) and the lines of got
// missing from want (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// checkNamesFault runs `agui-relay check --version 1.0` on a stream the 1.0
// consumer rejects directly: it must judge it malformed (exit 1) and name the
// fault the consumer tripped on.
func checkNamesFault(id, clientErr string) string {
	file := filepath.Join(corpusDir, filepath.FromSlash(id)+".sse")
	out, err := exec.Command(relayBin, "check", "--version", "1.0", file).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return fmt.Sprintf("%s: check did not run: %v", id, err)
	}
	if code != 1 {
		return fmt.Sprintf("%s: the 1.0 consumer rejects it (%s) but check exits %d", id, firstLine(clientErr), code)
	}
	text := string(out)
	for _, want := range faultTerms(clientErr) {
		if strings.Contains(text, want) {
			return ""
		}
	}
	return fmt.Sprintf("%s: check does not name the fault the 1.0 consumer reports (%s); check said: %s", id, firstLine(clientErr), firstLine(text))
}

// faultTerms picks from the consumer's error what a plain report must
// mention: the missing field or the event type and rule involved.
func faultTerms(clientErr string) []string {
	var terms []string
	var issues []struct {
		Path []any `json:"path"`
	}
	if json.Unmarshal([]byte(clientErr), &issues) == nil {
		for _, is := range issues {
			if len(is.Path) > 0 {
				terms = append(terms, fmt.Sprint(is.Path[len(is.Path)-1]))
			}
		}
	}
	for _, typ := range []string{"STEP_FINISHED", "STEP_STARTED", "RUN_ERROR", "RUN_STARTED", "RUN_FINISHED", "TEXT_MESSAGE", "TOOL_CALL"} {
		if strings.Contains(clientErr, typ) {
			terms = append(terms, typ)
		}
	}
	if len(terms) == 0 {
		terms = []string{firstLine(clientErr)}
	}
	return terms
}
