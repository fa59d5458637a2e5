// Package cli is agui-relay's command line: serve (the relay, its flags
// and routes file), translate, check, load and versions. It is the binary's
// and no library's: main calls Run.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commands maps a subcommand to its entry point. Each returns the process
// exit code: 0 success, 1 failure (or a verdict of "malformed"), 2 usage.
var commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"serve":     runServe,
	"translate": runTranslate,
	"check":     runCheck,
	"load":      runLoad,
	"versions":  runVersions,
}

// Run runs the command named by args (serve when none is) and returns the
// process exit code: 0 success, 1 failure (or a verdict of "malformed"),
// 2 usage.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		usage(stdout)
		return 0
	}
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		switch {
		case len(args) == 0:
			usage(stdout)
			return 0
		case commands[args[0]] == nil:
			// As git and go: help for a command that does not exist is a
			// usage error, not the general help with exit 0.
			fmt.Fprintf(stderr, "agui-relay help: unknown command %q\nRun 'agui-relay --help' for usage.\n", args[0])
			return 2
		}
		return run(append(args, "--help"), stdin, stdout, stderr) // help load report: load report --help
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "agui-relay: unknown command %q\nRun 'agui-relay --help' for usage.\n", name)
		return 2
	}
	return cmd(args, stdin, stdout, stderr)
}

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--h" || arg == "-help" || arg == "--help"
}

// usage is agui-relay's help: the commands, each with one line, then the
// flags of serve, the default command.
func usage(w io.Writer) {
	fmt.Fprint(w, `usage: agui-relay [command] [flags]

commands:
  serve       run the relay (the default command: agui-relay [flags] is agui-relay serve [flags])
  translate   translate a recorded event stream or RunAgentInput to another version
  check       judge a recorded stream or input against a version, or a live agent (--url)
  load        load-test an AG-UI endpoint: timings, throughput, errors, completeness
  versions    list the versions, legacy profiles and the deprecation registry
  help        this text; agui-relay help <command> is agui-relay <command> --help

Run 'agui-relay <command> --help' for a command's flags.

flags of serve (each also read from the environment variable AGUI_RELAY_<FLAG>,
upper case, - becomes _; the command line wins):
`)
	serveFlags(&serveConfig{}, w).PrintDefaults()
}

// newFlagSet returns a flag set for a command whose errors go to out.
// Parse it with parseFlags, which reports a usage error in two lines rather
// than under the whole usage. When out is a cmdOutput, the help asked for
// with --help goes to its stdout.
func newFlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agui-relay "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

// cmdOutput is a command's flag output: usage errors go to stderr, and the
// help the user asked for to stdout with exit 0, as go, git and kubectl
// print it, so that `agui-relay load --help | less` shows it.
type cmdOutput struct{ stdout, stderr io.Writer }

func (o *cmdOutput) Write(p []byte) (int, error) { return o.stderr.Write(p) }

// parseFlags parses args into fs with the flag package's own reporting
// turned off: --help prints the usage (parseFlags then returns
// flag.ErrHelp), and any other error is the caller's to report with
// usageError. A negative duration is an error (negativeDuration).
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil {
		err = negativeDuration(fs, args)
	}
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		if o, ok := out.(*cmdOutput); ok {
			fs.SetOutput(o.stdout)
			defer fs.SetOutput(out)
		}
		if usage == nil {
			fmt.Fprintf(fs.Output(), "usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		} else {
			usage()
		}
	}
	return err
}

// usageError reports a usage error of fs's command as go and kubectl do,
// the error and a pointer to --help, and returns the exit code 2.
func usageError(fs *flag.FlagSet, err error) int {
	fmt.Fprintf(fs.Output(), "%s: %v\nRun '%s --help' for usage.\n", fs.Name(), err, fs.Name())
	return 2
}

// parseInterspersed parses args whose flags may come before and after the
// positional arguments, and returns those. When it returns false, the
// command ends with the code: 0 after --help, 2 on a usage error (which it
// reported).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, usageError(fs, err), false
		}
		rest = fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		positional, rest = append(positional, rest[0]), rest[1:]
	}
}

// parseWithEnv parses args, then gives every flag not set on the command
// line the value of its environment variable AGUI_RELAY_<FLAG> (upper case,
// "-" becomes "_"), so that a flag given on the command line wins.
func parseWithEnv(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		key := EnvName(f.Name)
		if v := getenv(key); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %v", key, v, e)
			} else if isNegativeDuration(f) {
				// Named as the user set it: the variable, its value as written.
				err = fmt.Errorf("%s=%v", key, badDuration(v, durationZero(f)))
			}
		}
	})
	return err
}

// EnvName is the environment variable that sets a flag.
func EnvName(flagName string) string {
	return "AGUI_RELAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
