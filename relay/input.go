package relay

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// A run's body is read once (rules.ReadInput), which validates it and
// locates its members; the judgement does not validate again.

// JudgeInput lists what the rules of version v find malformed in a
// RunAgentInput; it is the default Relay.CheckInput. Unrecognised members
// are not errors: the input translation strips them for an older producer.
func JudgeInput(v negotiate.Version, body []byte) []InputError {
	return inputErrors(rules.JudgeInput(v, body))
}

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

// readInput checks that a run's body is a JSON object nested at most
// rules.MaxNesting deep, before it is judged.
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

func (r *Relay) checkInput(in *rules.Input, v negotiate.Version) []InputError {
	if r.CheckInput != nil {
		return r.CheckInput(v, in.Body())
	}
	return inputErrors(in.Judge(v))
}

// memberString is gjson's Result.String of raw, copied: the body is the
// server's buffer.
func memberString(raw string) string {
	return strings.Clone(gjson.Parse(raw).String())
}
