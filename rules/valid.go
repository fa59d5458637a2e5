package rules

import "github.com/tidwall/gjson"

// MaxNesting is the deepest nesting of objects and arrays a document may
// have (encoding/json's limit). gjson validates recursively, one stack frame
// per level: a 16 MiB document of "[" exhausts the goroutine stack, a fatal
// error that no recover catches and that would end the whole relay.
const MaxNesting = 10000

// Valid reports whether doc is JSON text nested at most MaxNesting deep.
// Every untrusted document goes through it before anything parses it.
func Valid(doc string) bool { return NestingWithin(doc, MaxNesting) && gjson.Valid(doc) }

// NestingWithin reports whether no object or array of doc lies more than
// max levels deep, in one flat pass that skips strings. It does not
// validate; a document no longer than max bytes always passes.
func NestingWithin(doc string, max int) bool {
	if len(doc) <= max {
		return true
	}
	depth := 0
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
