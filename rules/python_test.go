package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/negotiate"
)

// The table's invariants: every rule has its source and what the input
// translation does about it; its range names releases the relay knows, in
// order; every known release has a table.
func TestPyRulesTable(t *testing.T) {
	for _, r := range PyRules() {
		if r.Name == "" || r.Source == "" || r.Reshape == "" || r.edit == nil {
			t.Errorf("%q: incomplete row", r.Name)
		}
		if _, ok := negotiate.PyProfileOf(r.From); !ok {
			t.Errorf("%q: from %s, not a known release", r.Name, r.From)
		}
		if !r.Until.IsZero() {
			if _, ok := negotiate.PyProfileOf(r.Until); !ok {
				t.Errorf("%q: until %s, not a known release", r.Name, r.Until)
			}
			if !r.From.Less(r.Until) {
				t.Errorf("%q: until %s is not after from %s", r.Name, r.Until, r.From)
			}
		}
		// A commit, 9 hex digits, names the source.
		if !strings.ContainsAny(r.Source[:9], "0123456789abcdef") || strings.Contains(r.Source[:9], " ") {
			t.Errorf("%q: source %q does not start with a commit", r.Name, r.Source)
		}
	}
	for _, p := range negotiate.PyProfiles {
		if _, ok := JudgePythonInput(p.Release, []byte(`{}`)); !ok {
			t.Errorf("%s has no input table", p.Release)
		}
	}
	if _, ok := JudgePythonInput(negotiate.PyRelease{Minor: 1, Patch: 3}, []byte(`{}`)); ok {
		t.Error("0.1.3, not a known release, has a table")
	}
}

// pyRefuses reports whether a Python producer answers the input with 422:
// a malformed value, or material its models refuse (Fatal).
func pyRefuses(j Judgement) (bool, string) {
	for _, f := range j.Findings {
		if f.Verdict == Malformed || (f.Verdict == Unrecognised && f.Fatal) {
			return true, f.Rule + " at " + f.Pointer
		}
	}
	return false, ""
}

// pyInput is a RunAgentInput with every member a Python release requires;
// edits replace or add top-level members (raw JSON), a value "-" removes
// the member.
func pyInput(edits ...string) []byte {
	members := []string{`"threadId"`, `"runId"`, `"state"`, `"messages"`, `"tools"`, `"context"`, `"forwardedProps"`}
	vals := map[string]string{
		`"threadId"`: `"t"`, `"runId"`: `"r"`, `"state"`: `{}`, `"messages"`: `[]`,
		`"tools"`: `[]`, `"context"`: `[]`, `"forwardedProps"`: `{}`,
	}
	for i := 0; i+1 < len(edits); i += 2 {
		k := `"` + edits[i] + `"`
		if _, ok := vals[k]; !ok {
			members = append(members, k)
		}
		vals[k] = edits[i+1]
	}
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, k := range members {
		if vals[k] == "-" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k + ":" + vals[k])
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func msgs(ms ...string) string { return "[" + strings.Join(ms, ",") + "]" }

// TestPythonInputRules is one table per Python release of what its models
// accept and refuse, built from the facts of issue 26 as checked against
// the source (pyRules, negotiate.PyProfiles).
func TestPythonInputRules(t *testing.T) {
	user := func(content string) string { return `{"id":"u","role":"user","content":` + content + `}` }
	image := `{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}`
	// refused lists the 0.1.x releases that refuse the input, as ranges
	// "first-until" (until excluded, empty: no end) separated by commas,
	// "all" for every 0.1.x release; refused10 is 1.0.0's verdict, read as
	// the 1.0 schema with hard unions.
	cases := []struct {
		name      string
		in        []byte
		refused   string
		refused10 bool
	}{
		{"complete input", pyInput(), "", false},
		{"state null", pyInput("state", "null"), "", false},
		{"forwardedProps null", pyInput("forwardedProps", "null"), "", true},
		{"state absent", pyInput("state", "-"), "all", false},
		{"forwardedProps absent", pyInput("forwardedProps", "-"), "all", false},
		{"tools absent", pyInput("tools", "-"), "all", false},
		{"context absent", pyInput("context", "-"), "all", false},
		{"Tool.description absent", pyInput("tools", `[{"name":"f","parameters":{}}]`), "all", true},
		{"Tool.parameters absent", pyInput("tools", `[{"name":"f","description":"d"}]`), "0.1.4-0.1.14", false},
		{"Tool.parameters null", pyInput("tools", `[{"name":"f","description":"d","parameters":null}]`), "", true},
		{"tool message with parts", pyInput("messages", msgs(`{"id":"t","role":"tool","toolCallId":"c","content":[{"type":"text","text":"x"}]}`)), "all", false},
		{"file source", pyInput("messages", msgs(user(`[{"type":"image","source":{"type":"file","value":"f"}}]`))), "all", false},
		{"unknown role", pyInput("messages", msgs(`{"id":"x","role":"narrator","content":"x"}`)), "all", true},
		{"unknown part type", pyInput("messages", msgs(user(`[{"type":"hologram"}]`))), "all", true},
		{"resume status unknown", pyInput("resume", `[{"interruptId":"i","status":"later"}]`), "0.1.4-0.1.10,0.1.19-", true},
		{"resume", pyInput("resume", `[{"interruptId":"i","status":"resolved"}]`), "0.1.4-0.1.10", false},
		{"protocolVersion", pyInput("protocolVersion", `"1.0"`), "0.1.4-0.1.10", false},
		{"parentRunId", pyInput("parentRunId", `"p"`), "0.1.4-0.1.10", false},
		{"unknown top-level key", pyInput("extra", `1`), "0.1.4-0.1.10", false},
		{"encryptedValue", pyInput("messages", msgs(`{"id":"a","role":"assistant","content":"x","encryptedValue":"e"}`)), "0.1.4-0.1.10", false},
		{"metadata", pyInput("messages", msgs(`{"id":"a","role":"assistant","content":"x","metadata":{}}`)), "0.1.4-0.1.10", false},
		{"subagentRunId", pyInput("messages", msgs(`{"id":"a","role":"assistant","content":"x","subagentRunId":"s"}`)), "0.1.4-0.1.10", false},
		{"Tool.metadata", pyInput("tools", `[{"name":"f","description":"d","parameters":{},"metadata":{}}]`), "0.1.4-0.1.10", false},
		{"ToolMessage.error", pyInput("messages", msgs(`{"id":"t","role":"tool","toolCallId":"c","content":"x","error":"e"}`)), "0.1.4-0.1.9", false},
		{"activity message", pyInput("messages", msgs(`{"id":"v","role":"activity","activityType":"a","content":{}}`)), "0.1.4-0.1.10", false},
		{"reasoning message", pyInput("messages", msgs(`{"id":"z","role":"reasoning","content":"x"}`)), "0.1.4-0.1.11", false},
		{"user text parts", pyInput("messages", msgs(user(`[{"type":"text","text":"x"}]`))), "0.1.4-0.1.10", false},
		{"binary part", pyInput("messages", msgs(user(`[{"type":"binary","mimeType":"image/png","data":"AAAA"}]`))), "0.1.4-0.1.10", false},
		{"image part", pyInput("messages", msgs(user("["+image+"]"))), "0.1.4-0.1.15", false},
	}
	rel := func(s string) negotiate.PyRelease {
		if s == "" {
			return negotiate.PyRelease{}
		}
		r, _, err := negotiate.ParsePyRelease("py" + s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	refuses := func(ranges string, r negotiate.PyRelease) bool {
		if ranges == "all" {
			return true
		}
		for _, rg := range strings.Split(ranges, ",") {
			first, until, ok := strings.Cut(rg, "-")
			if ok && !r.Less(rel(first)) && (until == "" || r.Less(rel(until))) {
				return true
			}
		}
		return false
	}
	for _, p := range negotiate.PyProfiles {
		t.Run(p.Release.String(), func(t *testing.T) {
			for _, c := range cases {
				want := c.refused10
				if p.Release.Major == 0 {
					want = refuses(c.refused, p.Release)
				}
				j, _ := JudgePythonInput(p.Release, c.in)
				got, why := pyRefuses(j)
				if got != want {
					t.Errorf("%s: refused %v (%s), want %v\n%s", c.name, got, why, want, c.in)
				}
			}
		})
	}
}

// Under extra="forbid" an unknown member is refused at any depth, and named
// where it is.
func TestPythonForbidLocates(t *testing.T) {
	in := pyInput("messages", msgs(`{"id":"a","role":"assistant","content":"x","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}","extra":1}}]}`))
	j, _ := JudgePythonInput(negotiate.PyRelease{Minor: 1, Patch: 9}, in)
	got := fmt.Sprint(j.Findings)
	if !strings.Contains(got, "/messages/0/toolCalls/0/function/extra") {
		t.Errorf("0.1.9 findings %s do not locate the unknown member", got)
	}
	j, _ = JudgePythonInput(negotiate.PyRelease{Minor: 1, Patch: 10}, in)
	if refused, why := pyRefuses(j); refused {
		t.Errorf("0.1.10 (extra=\"allow\") refuses it: %s", why)
	}
}
