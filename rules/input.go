package rules

import (
	"strconv"
	"unsafe"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Input is a RunAgentInput that ReadInput accepted: JSON text nested at most
// MaxNesting deep whose value is an object. The one pass that validated it
// also located its top-level members, so Member reads one without walking
// the document again, and Judge judges it without validating it again.
//
// An Input borrows the body it was read from, and so does every string it
// returns: they are valid as long as the body is, unchanged.
type Input struct {
	body []byte
	src  string // body, as a string
	doc  string // the object, blanks around it trimmed
	top  topKeys
}

// ReadInput validates body as a RunAgentInput's document. When it is not one
// the Judgement is Malformed with one finding about the whole document (the
// pointer ""), whose rule is "max-depth:N" (nested deeper than MaxNesting,
// said first whatever else is wrong), "invalid-json" or "type:object", as
// JudgeInput reports it; the Input is then the zero one.
func ReadInput(body []byte) (Input, Judgement) {
	in := Input{body: body, src: unsafe.String(unsafe.SliceData(body), len(body))}
	doc, rule := readDocument(in.src, &in.top)
	if rule != "" {
		var j judge
		j.add(Malformed, "", rule, "RunAgentInput", true)
		return Input{}, j.out
	}
	in.doc = doc
	return in, Judgement{}
}

// Body returns the body the input was read from.
func (in *Input) Body() []byte { return in.body }

// Member returns the raw JSON text of the input's first top-level member
// named key (escapes in keys decoded, as a JSON reader compares them), or ""
// when there is none. It reads where the validation found the member; only
// an input with more than 16 top-level members, or one that names a member
// twice, is walked again, at its top level.
func (in *Input) Member(key string) string {
	k := &in.top
	for i, s := range k.seen[:min(k.n, len(k.seen))] {
		if s == key {
			at := skipWS(in.src, k.at[i])
			return in.src[at:valueEnd(in.src, at)]
		}
	}
	if k.repeated || k.n > len(k.seen) {
		return memberOf(in.doc, key)
	}
	return ""
}

// Judge is JudgeInput(v, in.Body()), without validating again.
func (in *Input) Judge(v negotiate.Version) Judgement {
	s := schemaFor(v)
	j := judge{s: s}
	j.object(s.obj("RunAgentInput"), in.doc)
	return j.out
}

// readDocument validates str and returns it, blanks around it trimmed, when
// its value is an object; otherwise it returns the rule it breaks. keys, when
// not nil, is given the top-level keys (see topKeys).
func readDocument(str string, keys *topKeys) (doc, rule string) {
	var stack [1]uint64
	ok, deeper := valid(str, stack[:], keys)
	if deeper {
		if keys != nil {
			*keys = topKeys{} // the first pass stopped 64 levels deep
		}
		ok = validDeep(str, keys)
	}
	if !ok {
		if !NestingWithin(str, MaxNesting) {
			return "", "max-depth:" + strconv.Itoa(MaxNesting)
		}
		return "", "invalid-json"
	}
	i, j := skipWS(str, 0), len(str)
	for isWS(str[j-1]) { // valid JSON text has a value between its blanks
		j--
	}
	if str = str[i:j]; str[0] != '{' {
		return "", "type:object"
	}
	return str, ""
}
