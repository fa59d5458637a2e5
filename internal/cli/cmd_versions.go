package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

func runVersions(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("versions", &cmdOutput{stdout, stderr})
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
	if err := parseFlags(fs, args); err != nil {
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

	var rows [][]string
	for i := len(negotiate.Profiles) - 1; i >= 0; i-- {
		p := negotiate.Profiles[i]
		served := "yes"
		if ok, _ := negotiate.Supported(p.Last); !ok {
			served = "no"
		}
		rows = append(rows, []string{p.Name, releases(p), strconv.Itoa(len(rules.EventTypes(p.Last))), served, p.Summary})
	}
	writeTable(stdout, []string{"PROFILE", "RELEASES", "EVENT TYPES", "SERVED", "SUMMARY"}, rows, 4)

	fmt.Fprintln(stdout, "\nPython SDK releases (ag-ui-protocol; --producer-version ag-ui-protocol@X.Y.Z or pyX.Y.Z):")
	rows = nil
	for i := len(negotiate.PyProfiles) - 1; i >= 0; i-- {
		p := negotiate.PyProfiles[i]
		var own []string
		for _, r := range rules.PyRules() {
			if r.Holds(p.Release) {
				own = append(own, r.Name)
			}
		}
		rows = append(rows, []string{p.Release.Name(), fmt.Sprintf("%s (%s)", p.Events, negotiate.ProfileOf(p.Events).Name), p.Input.String(),
			p.Adds, strings.Join(own, "; "), p.Source})
	}
	writeTable(stdout, []string{"RELEASE", "EVENTS AS", "INPUT AS CORE", "ADDS", "INPUT RULES OF ITS OWN", "SOURCE"}, rows, 3)
	fmt.Fprintln(stdout, "Every release to 0.1.20 writes events with exclude_none, which drops a CUSTOM.value, RAW.event or\n"+
		"STATE_SNAPSHOT.snapshot holding None: the registry's absent-means-null entries below.")

	fmt.Fprintln(stdout, "\ndeprecation registry:")
	header := []string{"RETIRED SHAPE", "TRANSLATION STEP", "RETIRED IN", "EXPIRES"}
	if usage != nil {
		header = append(header, "RUNS")
	}
	side := len(header)
	header = append(header, "REPLACEMENT")
	if usage != nil {
		header = append(header, "LAST SEEN", "NEEDED BY (route: producer -> consumer, runs)")
	}
	rows = nil
	for _, d := range rules.Deprecations() {
		row := []string{d.Shape, d.Step, d.Retired.String(), d.Expires.Format(time.DateOnly)}
		if usage != nil {
			u := usage[d.Shape]
			last, users := "-", []string{}
			if u.LastSeen != nil {
				last = u.LastSeen.Format(time.RFC3339)
			}
			for _, who := range u.Users {
				users = append(users, fmt.Sprintf("%s: %s -> %s (%d)", who.Route, who.From, who.To, who.Runs))
			}
			row = append(row, strconv.FormatInt(u.Runs, 10), d.Replacement, last, strings.Join(users, "; "))
		} else {
			row = append(row, d.Replacement)
		}
		rows = append(rows, row)
	}
	writeTable(stdout, header, rows, side)
	return 0
}

// releases spells the releases of a profile: "1.0", "0.0.59" or
// "0.0.45 to 0.0.53".
func releases(p negotiate.Profile) string {
	if p.First == p.Last {
		return p.First.String()
	}
	return p.First.String() + " to " + p.Last.String()
}

// maxWidth is the widest line versions writes.
const maxWidth = 100

// writeTable writes a header and rows for a terminal maxWidth wide. The
// first side columns are set side by side, aligned; the others go below
// each row, one "name: value" a column (empty values left out), indented
// and wrapped. A single other column stays on the row, wrapped in place,
// when there is room for it there.
func writeTable(w io.Writer, header []string, rows [][]string, side int) {
	widths := make([]int, side)
	for _, r := range append([][]string{header}, rows...) {
		for i := range widths {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	at := 0 // where the columns after the side ones start
	for _, n := range widths {
		at += n + 2
	}
	inline := len(header) == side+1 && maxWidth-at >= 40
	line := func(r []string) string {
		var b strings.Builder
		for i, n := range widths {
			b.WriteString(r[i])
			b.WriteString(strings.Repeat(" ", n+2-utf8.RuneCountInString(r[i])))
		}
		return b.String()
	}
	top := line(header)
	if inline {
		top += header[side]
	}
	fmt.Fprintln(w, strings.TrimRight(top, " "))
	for _, r := range rows {
		l := line(r)
		if inline {
			for i, part := range wrap(r[side], maxWidth-at) {
				if i > 0 {
					l = strings.Repeat(" ", at)
				}
				fmt.Fprintln(w, l+part)
			}
			continue
		}
		fmt.Fprintln(w, strings.TrimRight(l, " "))
		for i := side; i < len(header); i++ {
			if r[i] == "" {
				continue
			}
			for j, part := range wrap(strings.ToLower(header[i])+": "+r[i], maxWidth-6) {
				indent := "    "
				if j > 0 {
					indent = "      "
				}
				fmt.Fprintln(w, indent+part)
			}
		}
	}
}

// wrap splits s at spaces into lines of at most width runes; a word longer
// than width has a line of its own.
func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		wn := utf8.RuneCountInString(word)
		if n > 0 && n+1+wn > width {
			lines = append(lines, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(word)
		n += wn
	}
	if n > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	return lines
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
