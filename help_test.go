package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
)

// The flag package names a flag's value after the first back-quoted words of
// its usage string; a usage that quotes a command for another reason turns
// into a nonsense value name. Every flag line of every command's --help is
// "-name" or "-name value", with the value named in one word.
func TestHelpNamesEachValueInOneWord(t *testing.T) {
	line := regexp.MustCompile(`^  -[a-z0-9-]+( [a-z]+)?$`)
	for cmd := range commands {
		var out strings.Builder
		run([]string{cmd, "--help"}, nil, io.Discard, &out)
		n := 0
		for _, l := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(l, "  -") {
				continue
			}
			n++
			if !line.MatchString(l) {
				t.Errorf("%s --help: flag line %q names its value in more than one word", cmd, l)
			}
		}
		if n == 0 {
			t.Errorf("%s --help lists no flags:\n%s", cmd, out.String())
		}
	}
	var out strings.Builder
	run([]string{"serve", "--help"}, nil, io.Discard, &out)
	if !strings.Contains(out.String(), "  -record-dir dir\n") {
		t.Errorf("serve --help does not show -record-dir with its value:\n%s", out.String())
	}
}
