package translate

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// The input direction: the RunAgentInput a consumer sends, on its way to the
// producer. Its boundaries are core versions (legacy-profiles §3.4, §6
// preamble), since producers import @ag-ui/core directly: 0.0.40 (content
// parts, activity, parentRunId), 0.0.45 (reasoning messages,
// encryptedValue), 0.0.49 (media parts), 0.0.54 (resume), 0.0.59
// (subagentRunId, metadata) and 1.0 (tools/context optional, tool-message
// parts, file sources, protocolVersion, no binary, forwardedProps non-null).
//
// Whatever is rewritten, forwardedProps reaches the producer byte for byte as
// the consumer sent it (spec 003: intermediaries MUST NOT alter it): no input
// step touches it, not even a null.

// InputChain returns the input steps that shape a RunAgentInput for a
// producer of target, in the order they run: upgrades of retired shapes
// (oldest change first), then downgrades from the newest change down to the
// target, then Late steps (judging what the others left).
func InputChain(target negotiate.Version, steps []*Step) []*Step {
	return order(Input, target, steps)
}

// TranslateInput shapes one RunAgentInput for the producer, as plan decided
// (negotiate.DecideInput), with the registry's steps. Call it before
// contacting the producer, with the body the consumer sent.
//
// When plan.Translate is false it returns in itself, byte for byte.
// Otherwise it applies plan.Declare to protocolVersion (set to plan.Declared
// toward a producer of 1.0 or newer, removed toward one that predates the
// field), then the input chain for plan.To. in is never modified; out is a
// new slice when anything changed.
//
// run carries what the translation did: the caller reports it with
// run.Finish() (lossy warnings to the observer, once per shape with a
// count), or reads run.Warnings() first. Every rewrite was already counted
// through obs.Translated. obs may be nil.
func TranslateInput(plan negotiate.InputPlan, in []byte, obs Observer) (out []byte, run *Run) {
	return TranslateInputWith(Registry(), plan, in, obs)
}

// InputUnchanged reports whether TranslateInput(plan, in, obs) returns in
// itself and reports nothing, whatever the steps and obs: the plan does not
// translate and in holds no activity message (no "activity" string at
// all). A caller may then skip the translation and its Run. It costs one
// search of in's bytes.
func InputUnchanged(plan negotiate.InputPlan, in []byte) bool {
	return !plan.Translate && !bytes.Contains(in, activityMark)
}

// TranslateInputWith is TranslateInput with the given steps instead of the
// registry's (tests, or a relay configured with its own steps).
func TranslateInputWith(steps []*Step, plan negotiate.InputPlan, in []byte, obs Observer) (out []byte, run *Run) {
	if doc, j := rules.ReadInput(in); j.Verdict != rules.Malformed {
		return TranslateReadInput(InputChain(plan.To, steps), plan, &doc, obs)
	}
	// Not an object, or not JSON (gjson reads a broken document leniently,
	// and a step would rewrite what it half-read): nothing to shape, and the
	// caller's validation reports what is wrong.
	run = NewRun(Input, plan.From, plan.To, obs)
	run.Python = plan.Python
	root := Root(in)
	if id := root.Get("runId"); id.Type == gjson.String {
		run.RunID = strings.Clone(id.Str) // Str aliases the caller's input
	}
	if id := root.Get("threadId"); id.Type == gjson.String {
		run.ThreadID = strings.Clone(id.Str)
	}
	return in, run
}

// TranslateReadInput is TranslateInputWith for an input rules.ReadInput
// accepted, without reading it again, and with the input chain for plan.To
// already ordered (InputChain: a caller that translates many inputs orders
// it once per target): in.Body() is translated, and the run's ids are the
// members the reading located.
func TranslateReadInput(chain []*Step, plan negotiate.InputPlan, in *rules.Input, obs Observer) (out []byte, run *Run) {
	run = NewRun(Input, plan.From, plan.To, obs)
	run.Python = plan.Python
	run.RunID, run.ThreadID = stringMember(in.Member("runId")), stringMember(in.Member("threadId"))
	body := in.Body()
	if !plan.Translate {
		// Activity messages never reach the producer (spec 003), whatever
		// the versions: the one rewrite of an input otherwise forwarded
		// byte for byte, and none at all when there are none.
		run.step = inputActivity
		out = inputActivity.Input(run, body)
		run.step = nil
		return out, run
	}
	out = declareInput(body, Root(body), plan, in.Member("protocolVersion") != "")
	for _, s := range chain {
		run.step = s
		out = s.Input(run, out)
	}
	run.step = nil
	return out, run
}

// stringMember returns a copy of the string whose raw JSON text is raw, ""
// when raw is not a string.
func stringMember(raw string) string {
	if raw == "" || raw[0] != '"' {
		return ""
	}
	return strings.Clone(gjson.Parse(raw).Str) // Str may alias raw
}

// declareInput applies the plan's declaration with Declare, keeping the
// whitespace after the document (Declare's rewrite ends at the closing
// brace). An input without protocolVersion toward a producer that reads it
// (a 0.0.x consumer's, toward 1.0) is given the member as Declare's sjson
// gives it, last before the closing brace, written directly. declared says
// whether in has the member (as gjson finds it).
func declareInput(in []byte, root gjson.Result, plan negotiate.InputPlan, declared bool) []byte {
	end := root.Index + len(root.Raw)
	if plan.Declare == negotiate.DeclareSet && !declared && plainVersion(plan.Declared) {
		const member = `"protocolVersion":"`
		out := make([]byte, 0, len(in)+1+len(member)+len(plan.Declared)+1)
		out = append(out, in[root.Index:end-1]...) // sjson drops the blanks before the object
		if len(bytes.TrimLeft(in[root.Index+1:end-1], " \t\r\n")) > 0 {
			out = append(out, ',') // after the last member
		}
		out = append(out, member...)
		out = append(out, plan.Declared...)
		out = append(out, '"')
		return append(out, in[end-1:]...)
	}
	doc, _ := Declare(in[:end:end], plan.Declare, plan.Declared, nil)
	if len(doc) == end && &doc[0] == &in[0] {
		return in
	}
	return append(doc, in[end:]...)
}

// plainVersion reports whether v is written in JSON as it is, between
// quotes (a version string: digits, letters, dots, dashes, pluses).
func plainVersion(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !('0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z' || c == '.' || c == '-' || c == '+') {
			return false
		}
	}
	return v != ""
}

// inputEdit runs fn on a rewriter for the input document in and returns the
// edited document (see applyInput).
func inputEdit(in []byte, fn func(w *rewriter, root gjson.Result)) []byte {
	var w rewriter
	fn(&w, Root(in))
	return applyInput(in, &w.ed)
}

// applyInput returns in with ed applied, or in itself when ed is empty (or,
// a step bug, holds overlapping edits: the input then goes on unchanged
// rather than corrupted).
func applyInput(in []byte, ed *Edits) []byte {
	if ed.Len() == 0 {
		return in
	}
	out, ok := ed.Apply(in, nil)
	if !ok {
		return in
	}
	return out
}

// inputMessages is the shape under which input messages are named.
const inputMessages = "RunAgentInput.messages"
