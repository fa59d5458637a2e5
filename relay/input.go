package relay

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// The input check of a run (Relay.admit): the body is read once as a
// RunAgentInput document (rules.ReadInput), which validates it and locates
// its top-level members; the members the relay needs are read from there
// and the judgement does not validate again.

// JudgeInput lists what the rules of version v find malformed in a
// RunAgentInput, each with its JSON pointer and the rule it breaks. It is
// the relay's default Relay.CheckInput. Unrecognised members are not errors:
// the input translation strips them for a producer known to be older.
func JudgeInput(v negotiate.Version, body []byte) []InputError {
	return inputErrors(rules.JudgeInput(v, body))
}

// inputErrors lists the malformed findings of j, as JudgeInput does.
func inputErrors(j rules.Judgement) []InputError {
	if j.Verdict != rules.Malformed {
		return nil
	}
	var errs []InputError
	for _, f := range j.Findings {
		if f.Verdict == rules.Malformed {
			reason := f.Rule
			if f.Shape != "" {
				reason += " (" + f.Shape + ")"
			}
			errs = append(errs, InputError{f.Pointer, reason})
		}
	}
	return errs
}

// readInput is the check of a run's body the relay makes before it judges
// it (Relay.CheckInput): a JSON object, nested at most rules.MaxNesting
// deep (rules.ReadInput). It returns the error about the whole document
// when the body fails it.
func readInput(body []byte) (rules.Input, []InputError) {
	in, j := rules.ReadInput(body)
	if j.Verdict != rules.Malformed {
		return in, nil
	}
	reason := "not a JSON object" // "type:object"
	switch rule := j.Findings[0].Rule; {
	case strings.HasPrefix(rule, "max-depth:"):
		reason = "nested deeper than " + strconv.Itoa(rules.MaxNesting) + " levels"
	case rule == "invalid-json":
		reason = "not valid JSON"
	}
	return in, []InputError{{"", reason}}
}

// checkInput applies the CheckInput hook to the input's body, or by default
// judges the input (JudgeInput, without validating it again).
func (r *Relay) checkInput(in *rules.Input, v negotiate.Version) []InputError {
	if r.CheckInput != nil {
		return r.CheckInput(v, in.Body())
	}
	return inputErrors(in.Judge(v))
}

// memberString is what gjson's Result.String says of the raw member value
// raw ("" for none), a copy of its own: the body is the server's buffer.
func memberString(raw string) string {
	return strings.Clone(gjson.Parse(raw).String())
}
