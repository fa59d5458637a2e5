//go:build integration

package conformance

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// eraCase is a stream of testdata/streams/eras: <stream>@<release>.sse, the
// content of <stream> as a producer of that release's era wrote it.
type eraCase struct {
	exp     *Expect
	file    string // path under /s/ (eras/<stream>@<release>)
	release Ver
}

func eraStreams(t *testing.T, exps []*Expect) []eraCase {
	files, _ := filepath.Glob(filepath.Join(streamsDir, "eras", "*@*.sse"))
	var out []eraCase
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".sse")
		name, rel, _ := strings.Cut(base, "@")
		var exp *Expect
		for _, e := range exps {
			if e.Name == name {
				exp = e
			}
		}
		if exp == nil {
			t.Fatalf("%s: no expectation %s.expect.json", f, name)
		}
		out = append(out, eraCase{exp, "eras/" + base, parseVer(rel)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].release.Less(out[j].release) })
	return out
}

// TestDirect checks the expectations themselves against the real clients,
// with no relay: each stream is run directly by the releases of its own era
// that read it as it is (directConsumers), and what they show must be the
// view derived for them. This is what keeps the derivation rules honest: a
// rule that disagrees with a published client fails here, not in the matrix.
// It also proves each 1.0 stream is valid 1.0: the 1.0 client resolves it
// with no warning and every event passes @ag-ui/core 1.0.0 EventSchemas.
// Streams marked directRejected are rejected directly by every release (the
// relay is what makes them readable); that is checked too.
func TestDirect(t *testing.T) {
	requireSetup(t)
	exps, err := loadExpectations(streamsDir)
	if err != nil {
		t.Fatal(err)
	}
	producer := startProducer(t)
	type item struct {
		exp  *Expect
		file string // stream path under /s/
	}
	byClient := map[string][]item{}
	var order []string
	add := func(c string, it item) {
		if byClient[c] == nil {
			order = append(order, c)
		}
		byClient[c] = append(byClient[c], it)
	}
	for _, e := range exps {
		consumers := e.DirectConsumers
		if e.DirectRejected {
			consumers = []string{"0.0.59", "1.0.0"}
		}
		for _, c := range consumers {
			add(c, item{e, e.Name})
		}
	}
	// each era rendering is read by the legacy matrix consumers of its era:
	// from its release up to (not including) the next rendering's
	eras := eraStreams(t, exps)
	for i, er := range eras {
		for _, c := range Consumers {
			v := parseVer(c)
			if v == v1 || v.Less(er.release) || (i+1 < len(eras) && !v.Less(eras[i+1].release)) {
				continue
			}
			add(c, item{er.exp, er.file})
		}
	}
	for _, c := range order {
		t.Run("consumer="+c, func(t *testing.T) {
			t.Parallel()
			items := byClient[c]
			cases := make([]Case, len(items))
			for i, it := range items {
				cases[i] = streamCase(producer.URL, it.exp, c, c+"-direct")
				cases[i].Name = it.file
				cases[i].URL = producer.URL + "/s/" + it.file + "?consumer=" + c + "-direct"
			}
			outs := runClient(t, c, cases)
			for i, it := range items {
				var reasons []string
				if it.exp.DirectRejected {
					if outs[i].Resolved {
						reasons = append(reasons, "expected the release to reject this stream directly, but it resolved")
					}
				} else {
					// no relay: nothing is translated, so only the consumer
					// side is checked
					plain := *it.exp
					plain.Losses = nil
					reasons = checkPair(&plain, c, outs[i], nil)
				}
				reportVia(t, c, strings.TrimPrefix(it.file, "eras/"), "direct", reasons)
			}
		})
	}
}
