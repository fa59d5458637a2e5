package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func runVersions(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("versions", stderr)
	admin := fs.String("admin", "", "base URL of a running relay's admin server (http://127.0.0.1:9090): show next to each\nretired shape how many runs still needed its translation, when last, and who (route, versions)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: agui-relay versions [--admin URL]

Lists the protocol versions the relay implements, how it learns a run's
consumer version (declared, configured or inferred), the legacy SDK releases
it serves grouped by legacy profile, the releases of the Python SDK
(ag-ui-protocol) with the profile each maps to and the input rules of its
own, and the deprecation registry: every retired
shape, what replaces it, the translation step, the version that retired it
and the date its translation expires. With --admin, the live usage of a
running relay (its GET /deprecations) is shown next to each entry.

flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, func() error { return fs.Parse(args) }); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return usageError(fs, err)
	}
	if fs.NArg() > 0 {
		return usageError(fs, fmt.Errorf("takes no arguments, got %q", fs.Args()))
	}
	var usage map[string]metrics.DeprecationUsage
	if *admin != "" {
		rep, err := fetchDeprecations(*admin)
		if err != nil {
			fmt.Fprintf(stderr, "agui-relay versions: --admin: %v\n", err)
			return 1
		}
		usage = map[string]metrics.DeprecationUsage{}
		for _, u := range rep.Deprecations {
			usage[u.Shape] = u
		}
	}
	fmt.Fprintf(stdout, "current protocol version: %s (emitted and declared by the relay)\n", negotiate.Current)
	fmt.Fprintf(stdout, "oldest served consumer: %s\n\n", negotiate.OldestSupported)
	fmt.Fprintf(stdout, `how a run's consumer version is learnt (its log line, meta.json and metrics say which):
  %-11s RunAgentInput.protocolVersion is present: taken at its word
  %-11s it is absent and --consumer-version (a route's consumerVersion) names a release;
              1.0 reads such a consumer as current, a legacy release (0.0.48) names it exactly
  %-11s it is absent and --consumer-version is auto (the default): the consumer predates the
              field and reads as %s, the newest release before it (CopilotKit 1.75 bundles it)

`, negotiate.Declared, negotiate.Configured, negotiate.Inferred, negotiate.NewestBeforeField())

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

	fmt.Fprintln(stdout, "\nPython SDK releases (ag-ui-protocol; --producer-version ag-ui-protocol@X.Y.Z or pyX.Y.Z):")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tEVENTS AS\tINPUT AS CORE\tINPUT RULES OF ITS OWN\tADDS\tSOURCE")
	for i := len(negotiate.PyProfiles) - 1; i >= 0; i-- {
		p := negotiate.PyProfiles[i]
		var own []string
		for _, r := range rules.PyRules() {
			if r.Holds(p.Release) {
				own = append(own, r.Name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\t%s\n", p.Release.Name(), p.Events, negotiate.ProfileOf(p.Events).Name, p.Input,
			strings.Join(own, "; "), p.Adds, p.Source)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "Every release to 0.1.20 writes events with exclude_none, which drops a CUSTOM.value, RAW.event or\n"+
		"STATE_SNAPSHOT.snapshot holding None: the registry's absent-means-null entries below.")

	fmt.Fprintln(stdout, "\ndeprecation registry:")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	header := "RETIRED SHAPE\tREPLACEMENT\tTRANSLATION STEP\tRETIRED IN\tEXPIRES"
	if usage != nil {
		header += "\tRUNS\tLAST SEEN\tNEEDED BY (route: producer -> consumer, runs)"
	}
	fmt.Fprintln(tw, header)
	for _, d := range rules.Deprecations() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", d.Shape, d.Replacement, d.Step, d.Retired, d.Expires.Format(time.DateOnly))
		if usage != nil {
			u := usage[d.Shape]
			last, users := "-", []string{}
			if u.LastSeen != nil {
				last = u.LastSeen.Format(time.RFC3339)
			}
			for _, who := range u.Users {
				users = append(users, fmt.Sprintf("%s: %s -> %s (%d)", who.Route, who.From, who.To, who.Runs))
			}
			fmt.Fprintf(tw, "\t%d\t%s\t%s", u.Runs, last, strings.Join(users, "; "))
		}
		fmt.Fprintln(tw)
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

// fetchDeprecations reads GET /deprecations of a running relay's admin
// server.
func fetchDeprecations(base string) (*metrics.DeprecationsReport, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want the admin server's base URL, such as http://127.0.0.1:9090", base)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(base, "/") + "/deprecations")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /deprecations: %s", resp.Status)
	}
	var rep metrics.DeprecationsReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&rep); err != nil {
		return nil, fmt.Errorf("GET /deprecations: %v", err)
	}
	return &rep, nil
}
