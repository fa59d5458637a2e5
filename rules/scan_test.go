package rules

import (
	"strings"
	"testing"
)

// stringEndReference is stringEnd byte by byte.
func stringEndReference(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return min(i, len(s))
}

// stringEnd finds the end of every string of valid documents as the byte by
// byte reference does: Valid's seeds put each special byte at each offset
// of a long string, on either side of an eight-byte word.
func TestStringEnd(t *testing.T) {
	docs := append(validSeeds(), readInputSeeds()...)
	docs = append(docs, `"`+strings.Repeat(`\\`, 9)+`"`, `"`+strings.Repeat(`\"`, 9)+`"`, `["abcdefg\\","hijklmn\""]`)
	n := 0
	for _, doc := range docs {
		if !Valid(doc) {
			continue
		}
		for i := 0; i < len(doc); {
			if doc[i] != '"' {
				i++
				continue
			}
			n++
			got, want := stringEnd(doc, i), stringEndReference(doc, i)
			if got != want {
				t.Fatalf("stringEnd(%.60q, %d) = %d, want %d", doc, i, got, want)
			}
			i = want
		}
	}
	if n < 100 {
		t.Fatalf("only %d strings checked", n)
	}
}
