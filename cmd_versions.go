package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func runVersions(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("versions", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: agui-relay versions

Lists the protocol versions the relay implements, the legacy SDK releases it
serves grouped by legacy profile, and the deprecation registry: every retired
shape, what replaces it, the translation step, the version that retired it
and the date its translation expires.
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agui-relay versions: takes no arguments")
		return 2
	}
	fmt.Fprintf(stdout, "current protocol version: %s (emitted and declared by the relay)\n", negotiate.Current)
	fmt.Fprintf(stdout, "oldest served consumer: %s\n\n", negotiate.OldestSupported)

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tRELEASES\tEVENT TYPES\tSERVED\tSUMMARY")
	for i := len(negotiate.Profiles) - 1; i >= 0; i-- {
		p := negotiate.Profiles[i]
		served := "yes"
		if ok, _ := negotiate.Supported(p.Last); !ok {
			served = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", p.Name, releases(p), len(rules.EventTypes(p.Last)), served, p.Summary)
	}
	tw.Flush()

	fmt.Fprintln(stdout, "\ndeprecation registry:")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RETIRED SHAPE\tREPLACEMENT\tTRANSLATION STEP\tRETIRED IN\tEXPIRES")
	for _, d := range rules.Deprecations() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Shape, d.Replacement, d.Step, d.Retired, d.Expires.Format(time.DateOnly))
	}
	tw.Flush()
	return 0
}

// releases spells the releases of a profile: "1.0", or each 0.0.N.
func releases(p negotiate.Profile) string {
	if !p.First.Legacy() {
		return p.First.String()
	}
	var rs []string
	for n := p.First.Patch; n <= p.Last.Patch; n++ {
		rs = append(rs, negotiate.Version{Patch: n}.String())
	}
	return strings.Join(rs, " ")
}
