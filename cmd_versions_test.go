package main

import (
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func TestVersions(t *testing.T) {
	code, out, _ := runCmd(t, "", "versions")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	wantContains(t, out, "current protocol version: 1.0", "oldest served consumer: 0.0.37",
		"0.0.37 0.0.38 0.0.39 0.0.40", "0.0.54 0.0.55 0.0.56 0.0.57 0.0.58",
		"  declared    RunAgentInput.protocolVersion is present: taken at its word",
		"  configured  it is absent and --consumer-version", "1.0 reads such a consumer as current",
		"  inferred    it is absent and --consumer-version is auto (the default)", "reads as 0.0.59, the newest release before it")
	// The Python releases beside the TypeScript ones, each with its
	// profile, its core and its source.
	for _, p := range negotiate.PyProfiles {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, p.Release.Name()+" ") {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, p.Events.String()+" ("+negotiate.ProfileOf(p.Events).Name+")") ||
			!strings.Contains(line, p.Source) {
			t.Errorf("%s: %q", p.Release.Name(), line)
		}
	}
	wantContains(t, out, `ag-ui-protocol@0.1.9   0.0.37 (P37)`, `extra="forbid": any unknown member, anywhere`)
	reg := rules.Deprecations()
	if len(reg) == 0 {
		t.Fatal("empty registry")
	}
	for _, d := range reg {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, d.Shape+" ") {
				line = l
			}
		}
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
	if code, _, _ := runCmd(t, "", "versions", "extra"); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}
