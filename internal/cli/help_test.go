package cli

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
	line := regexp.MustCompile(`^  -[A-Za-z0-9-]+( [a-z]+)?$`)
	for cmd := range commands {
		var out strings.Builder
		run([]string{cmd, "--help"}, nil, &out, io.Discard)
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
	run([]string{"serve", "--help"}, nil, &out, io.Discard)
	if !strings.Contains(out.String(), "  -record-dir dir\n") {
		t.Errorf("serve --help does not show -record-dir with its value:\n%s", out.String())
	}
}

// A usage error is its message and a pointer to --help, as go and kubectl
// print them, exit 2: not the message buried above the whole usage.
func TestUsageErrorsPointToHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"translate"}, "agui-relay translate: --to is required"},
		{[]string{"translate", "--to", "2.0"}, "agui-relay translate: --to: 2.0 is not a release the relay knows (0.0.27 to 0.0.59, 1.0; see agui-relay versions)"},
		{[]string{"translate", "--to", "1.0", "--from", "0.0.99"}, "agui-relay translate: --from: 0.0.99 is not a release the relay knows (0.0.27 to 0.0.59, 1.0, ag-ui-protocol@0.1.4 to 1.0.0; see agui-relay versions)"},
		{[]string{"translate", "--input", "--to", "1.0", "--from", "1.3"}, "agui-relay translate: --from: 1.3 is not a release the relay knows (0.0.27 to 0.0.59, 1.0; see agui-relay versions)"},
		{[]string{"translate", "--to", "1.0", "--max-frame", "x"}, `agui-relay translate: invalid value "x" for flag -max-frame: parse error`},
		{[]string{"translate", "--to", "1.0", "a", "b"}, `agui-relay translate: at most one FILE, got ["a" "b"]`},
		{[]string{"check", "--version", "0.0.99"}, "agui-relay check: --version: 0.0.99 is not a release the relay knows (0.0.27 to 0.0.59, 1.0; see agui-relay versions)"},
		{[]string{"check", "--nope"}, "agui-relay check: flag provided but not defined: -nope"},
		{[]string{"check", "a", "b"}, `agui-relay check: at most one FILE, got ["a" "b"]`},
		{[]string{"versions", "x"}, `agui-relay versions: takes no arguments, got ["x"]`},
		{[]string{"load"}, "agui-relay load: want one URL, got 0"},
		{[]string{"load", "-c", "0", "http://127.0.0.1:1"}, `agui-relay load: invalid value "0" for flag -c: "0" is not a positive whole number`},
		{[]string{"serve", "--max-body", "x"}, `agui-relay serve: invalid value "x" for flag -max-body: want a positive size such as 65536, 64KiB or 10MiB`},
		{[]string{"--listen"}, "agui-relay serve: flag needs an argument: -listen"},
		{[]string{"--upstream", "localhost:8000"}, `agui-relay serve: --upstream "localhost:8000": want an absolute http(s) base URL without a query, such as http://127.0.0.1:8000/api`},
		{[]string{"bogus"}, `agui-relay: unknown command "bogus"`},
	} {
		var out, errb strings.Builder
		code := run(tc.args, strings.NewReader(""), &out, &errb)
		cmd := "agui-relay"
		if name, _, _ := strings.Cut(tc.want, ":"); name != cmd {
			cmd = name
		}
		want := tc.want + "\nRun '" + cmd + " --help' for usage.\n"
		if code != 2 || errb.String() != want || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr\n%s\nwant exit 2 and stderr\n%s", tc.args, code, out.String(), errb.String(), want)
		}
	}
}

// agui-relay --help, -h and help list every command with one line, then the
// flags of serve, the default command; help CMD is CMD --help.
func TestTopLevelHelpListsTheCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errb strings.Builder
		if code := run(args, nil, &out, &errb); code != 0 || errb.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
		for name := range commands {
			if !regexp.MustCompile(`(?m)^  ` + name + ` +\S.*$`).MatchString(out.String()) {
				t.Errorf("%q does not list %s with its line:\n%s", args, name, out.String())
			}
		}
		wantContains(t, out.String(), "Run 'agui-relay <command> --help'", "\n  -listen string\n", "\n  -upstream string\n")
	}
	var out strings.Builder
	if code := run([]string{"help", "translate"}, nil, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "usage: agui-relay translate") {
		t.Errorf("help translate: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"serve", "--help"}, nil, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "usage: agui-relay [serve] [flags]") {
		t.Errorf("serve --help: exit %d, %q", code, out.String())
	}
}

// The help asked for goes to stdout with exit 0, as go, git and kubectl
// print it, so that `agui-relay load --help | less` shows it; stderr stays
// empty. Every command, every way of asking.
func TestHelpGoesToStdout(t *testing.T) {
	var asks [][]string
	for cmd := range commands {
		asks = append(asks, []string{cmd, "--help"}, []string{cmd, "-h"}, []string{"help", cmd})
	}
	asks = append(asks, []string{"load", "report", "--help"}, []string{"help", "load", "report"})
	var out strings.Builder
	if run([]string{"help", "load", "report"}, nil, &out, io.Discard); !strings.HasPrefix(out.String(), "usage: agui-relay load report") {
		t.Errorf("help load report: %.60q", out.String())
	}
	for _, args := range asks {
		var out, errb strings.Builder
		code := run(args, strings.NewReader(""), &out, &errb)
		if code != 0 || errb.Len() != 0 || !strings.HasPrefix(out.String(), "usage: agui-relay ") {
			t.Errorf("%q: exit %d, stderr %q, stdout starts %.40q; want exit 0, the usage on stdout, nothing on stderr", args, code, errb.String(), out.String())
		}
	}
}

// Help for a command that does not exist is a usage error that names it,
// as git's and go's: not the general help with exit 0.
func TestHelpForAnUnknownCommandIsAUsageError(t *testing.T) {
	var out, errb strings.Builder
	code := run([]string{"help", "nosuch"}, nil, &out, &errb)
	want := "agui-relay help: unknown command \"nosuch\"\nRun 'agui-relay --help' for usage.\n"
	if code != 2 || out.Len() != 0 || errb.String() != want {
		t.Errorf("help nosuch: exit %d, stdout %q, stderr %q; want exit 2 and stderr %q", code, out.String(), errb.String(), want)
	}
}

// translate --help says what the command does and gives examples and its
// exit status, as check's and load's do.
func TestTranslateHelpDescribes(t *testing.T) {
	for _, cmd := range [][]string{{"translate"}, {"check"}, {"load"}, {"load", "report"}} {
		var out strings.Builder
		run(append(cmd, "--help"), nil, &out, io.Discard)
		wantContains(t, out.String(), "\n\nExit status: ", "\nexamples:\n  ", "\nflags:\n")
	}
}
