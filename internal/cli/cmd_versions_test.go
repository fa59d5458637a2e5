package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func TestVersions(t *testing.T) {
	code, out, _ := runCmd(t, "", "versions")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantContains(t, out, "current protocol version: 1.0", "oldest served consumer: 0.0.37",
		"P37      0.0.37 to 0.0.40", "P54      0.0.54 to 0.0.58", "V1       1.0  ",
		"  declared    RunAgentInput.protocolVersion is present: taken at its word",
		"  configured  it is absent and --consumer-version", "1.0 reads such a consumer as current",
		"  inferred    it is absent and --consumer-version is auto (the default)", "reads as 0.0.59, the newest release before it")
	// The Python releases beside the TypeScript ones, each with its
	// profile, its core and its source.
	for _, p := range negotiate.PyProfiles {
		e := entry(out, p.Release.Name()+" ")
		if !strings.Contains(e, p.Events.String()+" ("+negotiate.ProfileOf(p.Events).Name+")") || !strings.Contains(e, p.Source) {
			t.Errorf("%s: %q", p.Release.Name(), e)
		}
	}
	wantContains(t, out, `ag-ui-protocol@0.1.9   0.0.37 (P37)`, `extra="forbid": any unknown member, anywhere`)
	reg := rules.Deprecations()
	if len(reg) == 0 {
		t.Fatal("empty registry")
	}
	for _, d := range reg {
		line := entry(out, d.Shape+" ")
		if line == "" {
			t.Errorf("registry entry %s not listed", d.Shape)
			continue
		}
		for _, s := range []string{d.Replacement, d.Step, d.Retired.String(), d.Expires.Format("2006-01-02")} {
			if !strings.Contains(line, s) {
				t.Errorf("%s: line lacks %q: %s", d.Shape, s, line)
			}
		}
	}
	// Every line fits a terminal 100 columns wide.
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	if code, _, _ := runCmd(t, "", "versions", "extra"); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}

// entry returns the row of versions' output that starts with prefix, with
// the indented lines below it (its wrapped columns), in one string; "" when
// there is none.
func entry(out, prefix string) string {
	var e []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, prefix):
			e = []string{l}
		case len(e) > 0 && strings.HasPrefix(l, " "):
			e = append(e, strings.TrimSpace(l))
		case len(e) > 0:
			return strings.Join(e, " ")
		}
	}
	return strings.Join(e, " ")
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"a b c", 10, []string{"a b c"}},
		{"aaaa bbbb cccc", 9, []string{"aaaa bbbb", "cccc"}},
		{"aaaaaaaaaaaa b", 5, []string{"aaaaaaaaaaaa", "b"}},
		{"é é é", 3, []string{"é é", "é"}},
	} {
		if got := wrap(tc.s, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}
