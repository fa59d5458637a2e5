package rules

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Hint returns the likely cause at the producer of a finding on document
// doc (an event or a RunAgentInput) judged against v, or "" when there is no
// telling. It is for operators reading `check` output, not for the hot path.
func Hint(v negotiate.Version, doc []byte, f Finding) string {
	s := unsafe.String(unsafe.SliceData(doc), len(doc))
	who := "the producer"
	if strings.HasPrefix(f.Shape, "RunAgentInput") {
		who = "the client" // an input comes from the consumer side
	}
	switch {
	case f.Rule == "required" && f.Pointer != "":
		name := f.Pointer[strings.LastIndexByte(f.Pointer, '/')+1:]
		if snake := snakeCase(name); snake != name && hasKeyAt(s, f.Pointer, snake) {
			return "field names are snake_case (" + snake + " for " + name + "): " + who + " likely serialises its models without camelCase aliases"
		}
		if f.Shape == "RUN_ERROR.message" {
			return "RUN_ERROR carries no message: the producer likely puts the error text in another field; every consumer rejects it"
		}
	case f.Rule == "unknown-property":
		name := f.Pointer[strings.LastIndexByte(f.Pointer, '/')+1:]
		if strings.IndexByte(name, '_') > 0 {
			return "field names are snake_case: " + who + " likely serialises its models without camelCase aliases"
		}
	case f.Rule == "unknown-event-type":
		if added, ok := EventTypeAddedIn(f.Shape); ok {
			return f.Shape + " came in release " + added.String() + ", later than " + v.String() +
				", the version judged: a consumer of " + v.String() + " " + unknownEventFate(f) +
				"; one of " + added.String() + " or later reads it (see agui-relay versions)"
		}
		h := "no AG-UI version has this event type: the producer likely emits a framework-specific event; consumers up to 0.0.59 fail the run on it, 1.0 drops it with a warning"
		if strings.Contains(f.Shape, "USAGE") {
			h += "; token usage belongs on RUN_FINISHED.usage or RUN_ERROR.usage (0.0.58 and later)"
		}
		return h
	}
	return ""
}

// unknownEventFate says what a consumer does with an event type it does
// not know.
func unknownEventFate(f Finding) string {
	if f.Fatal {
		return "fails the run on it"
	}
	return "drops it with a warning"
}

// hasKeyAt reports whether the object holding ptr's last token has key.
func hasKeyAt(doc, ptr, key string) bool {
	obj := doc
	toks := strings.Split(ptr, "/")[1:]
	for _, t := range toks[:len(toks)-1] {
		var next string
		switch {
		case obj != "" && obj[0] == '{':
			next = memberOf(obj, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
		case obj != "" && obj[0] == '[':
			n := 0
			eachItem(obj, func(v string) bool {
				if strconv.Itoa(n) == t {
					next = v
					return false
				}
				n++
				return true
			})
		}
		if next == "" {
			return false
		}
		obj = next
	}
	return obj != "" && obj[0] == '{' && memberOf(obj, key) != ""
}

// snakeCase spells a camelCase name the way snake_case serialisers do.
func snakeCase(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}
