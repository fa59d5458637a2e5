// Command agui-relay is a sidecar between AG-UI consumers and producers that
// bridges protocol versions while the stream flows. See README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "agui-relay: unknown command %q\n", name)
		usage(stderr)
		return 2
	}
	return cmd(args, stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: agui-relay [command] [flags]

commands:
  serve       run the relay (the default command)
  translate   translate a recorded event stream or RunAgentInput to another version
  check       judge a recorded stream or input against a version
  load        load-test an AG-UI endpoint: timings, throughput, errors, completeness
  versions    list the versions, legacy profiles and the deprecation registry

Run "agui-relay <command> --help" for a command's flags.
`)
}

// newFlagSet returns a flag set that reports usage errors to stderr, for
// commands that return exit code 2 on them.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agui-relay "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses args whose flags may come before and after the
// positional arguments, and returns those. When it returns false, the
// command ends with the code: 0 after --help, 2 on a usage error.
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
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
	if err := fs.Parse(args); err != nil {
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
			}
		}
	})
	return err
}

// EnvName is the environment variable that sets a flag.
func EnvName(flagName string) string {
	return "AGUI_RELAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
