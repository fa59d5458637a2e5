package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"
	"sigs.k8s.io/yaml"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

// routeConfig is one route with every value resolved: the config file's,
// or else the serve flag's.
type routeConfig struct {
	name, prefix, upstream           string
	stripPrefix                      bool
	producerVersion, consumerVersion negotiate.Version
	producerPython                   negotiate.PyRelease // set when producerVersion names a Python release
	connectTimeout, firstByteTimeout time.Duration
	idleTimeout, runTimeout          time.Duration
	consumerStallTimeout             time.Duration
	bodyTimeout                      time.Duration
	keepAlive                        time.Duration
	maxBody, maxFrame, maxConns      int
	cors                             relay.CORSOptions // off without AllowOrigins
	// noReuse: --upstream-reuse never.
	noReuse bool
}

// defaultRoute is the one route of a relay run without --config: every
// path, to --upstream (upstream, which may be the demo agent's URL).
func defaultRoute(c *serveConfig, upstream string) routeConfig {
	return routeConfig{
		name: "default", prefix: "/", upstream: upstream,
		producerVersion: c.producerVersion, consumerVersion: c.consumerVersion,
		producerPython: c.producerPython,
		connectTimeout: c.connectTimeout, firstByteTimeout: c.firstByteTimeout,
		idleTimeout: c.idleTimeout, runTimeout: c.runTimeout,
		consumerStallTimeout: c.consumerStallTimeout,
		bodyTimeout:          c.bodyTimeout,
		keepAlive:            c.keepAlive,
		maxBody:              int(c.maxBody), maxFrame: int(c.maxFrame), maxConns: c.maxConns,
		cors:    c.cors,
		noReuse: c.noReuse,
	}
}

// routesFile is the --config file (YAML or JSON; JSON is YAML). Listen
// addresses, logging and the shutdown grace stay flags; every route option
// left out takes the value of the serve flag of the same meaning.
type routesFile struct {
	Routes []json.RawMessage `json:"routes"`
}

// routeFile is one route as written in the file. Values that need a
// message naming their field are kept raw and read by resolveRoute.
type routeFile struct {
	Name            string          `json:"name"`
	Prefix          string          `json:"prefix"`
	Upstream        string          `json:"upstream"`
	StripPrefix     bool            `json:"stripPrefix"`
	ProducerVersion json.RawMessage `json:"producerVersion"`
	ConsumerVersion json.RawMessage `json:"consumerVersion"`
	Timeouts        struct {
		Connect   json.RawMessage `json:"connect"`
		FirstByte json.RawMessage `json:"firstByte"`
		Idle      json.RawMessage `json:"idle"`
		Run       json.RawMessage `json:"run"`
		// ConsumerStall is --consumer-stall-timeout's: how long the
		// consumer may take none of the stream.
		ConsumerStall json.RawMessage `json:"consumerStall"`
		// Body is --body-timeout's: how long a request body may send
		// nothing.
		Body json.RawMessage `json:"body"`
	} `json:"timeouts"`
	// KeepAlive is --keepalive's: the keep-alive interval.
	KeepAlive json.RawMessage `json:"keepAlive"`
	MaxBody   json.RawMessage `json:"maxBody"`
	MaxFrame  json.RawMessage `json:"maxFrame"`
	MaxConns  json.RawMessage `json:"maxConns"`
	CORS      json.RawMessage `json:"cors"`
	// UpstreamReuse is --upstream-reuse's: always or never.
	UpstreamReuse json.RawMessage `json:"upstreamReuse"`
}

// loadRoutes reads and checks the routes of a config file; c gives the
// defaults. Its errors name the file, the route and the field.
func loadRoutes(path string, c *serveConfig) ([]routeConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	routes, err := parseRoutes(data, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return routes, nil
}

// parseRoutes reads the routes of a config file's content (YAML or JSON).
func parseRoutes(data []byte, c *serveConfig) ([]routeConfig, error) {
	// Strict: a key given twice is an error, not the last one winning.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	var f routesFile
	if err := decodeStrict(j, &f); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			err = fmt.Errorf("%v: the file has one key, routes (listen addresses, logging and the shutdown grace are flags)", err)
		}
		return nil, err
	}
	if len(f.Routes) == 0 {
		return nil, errors.New("no routes: want routes: [{name, prefix, upstream, …}, …]")
	}
	routes := make([]routeConfig, 0, len(f.Routes))
	names, prefixes := map[string]int{}, map[string]int{}
	for i, raw := range f.Routes {
		where := fmt.Sprintf("routes[%d]", i)
		var named struct{ Name string }
		if json.Unmarshal(raw, &named) == nil && named.Name != "" {
			where = fmt.Sprintf("routes[%d] %q", i, named.Name)
		}
		var rf routeFile
		if err := decodeStrict(raw, &rf); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		rc, err := resolveRoute(&rf, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if j, ok := names[rc.name]; ok {
			return nil, fmt.Errorf("%s: name: %q is the name of routes[%d] already; names are unique", where, rc.name, j)
		}
		if j, ok := prefixes[rc.prefix]; ok {
			return nil, fmt.Errorf("%s: prefix: %q is the prefix of routes[%d] %q already; prefixes are unique", where, rc.prefix, j, routes[j].name)
		}
		names[rc.name], prefixes[rc.prefix] = i, i
		routes = append(routes, rc)
	}
	return routes, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields, and words
// type errors by the field's name in the file.
func decodeStrict(j []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s: want %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), withArticle(te.Value))
	case errors.As(err, &te):
		return fmt.Errorf("want an object, got %s", withArticle(te.Value))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func withArticle(jsonType string) string {
	if strings.HasPrefix(jsonType, "a") || strings.HasPrefix(jsonType, "o") {
		return "an " + jsonType
	}
	return "a " + jsonType
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "struct", "map":
		return "an object"
	case "slice":
		return "a list"
	}
	return goKind
}

var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// resolveRoute checks one route of the file and fills what it leaves out
// from the flags.
func resolveRoute(rf *routeFile, c *serveConfig) (routeConfig, error) {
	rc := defaultRoute(c, c.upstream)
	rc.name, rc.prefix, rc.stripPrefix = rf.Name, rf.Prefix, rf.StripPrefix
	switch {
	case rf.Name == "":
		return rc, errors.New("name: required (it names the route in logs and metrics)")
	case !routeName.MatchString(rf.Name):
		return rc, fmt.Errorf("name: %q: want letters, digits, '_', '.' and '-', starting with a letter or digit", rf.Name)
	case rf.Prefix == "":
		return rc, errors.New(`prefix: required ("/" for every path)`)
	}
	if err := relay.CheckPrefix(rf.Prefix); err != nil {
		return rc, fmt.Errorf("prefix: %v", err)
	}
	if rf.Upstream != "" {
		rc.upstream = rf.Upstream
	}
	if rc.upstream == "" {
		return rc, errors.New("upstream: required (there is no --upstream to default to)")
	}
	if err := checkUpstream(rc.upstream); err != nil {
		return rc, fmt.Errorf("upstream: %v", err)
	}
	var err error
	if rc.producerVersion, rc.producerPython, err = producerVersionField(rf.ProducerVersion, rc.producerVersion, rc.producerPython); err != nil {
		return rc, fmt.Errorf("producerVersion: %v", err)
	}
	if string(rf.ConsumerVersion) == `"`+auto+`"` {
		rc.consumerVersion = negotiate.Version{}
	} else if rc.consumerVersion, err = versionField(rf.ConsumerVersion, rc.consumerVersion, auto); err != nil {
		return rc, fmt.Errorf("consumerVersion: %v", err)
	}
	if !rc.consumerVersion.IsZero() {
		if ok, why := negotiate.Supported(rc.consumerVersion); !ok {
			return rc, fmt.Errorf("consumerVersion: %s is not served: %s", rc.consumerVersion, why)
		}
	}
	for _, d := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Duration
		zero string // what 0 means
	}{
		{"timeouts.connect", rf.Timeouts.Connect, &rc.connectTimeout, "no limit"},
		{"timeouts.firstByte", rf.Timeouts.FirstByte, &rc.firstByteTimeout, "no limit"},
		{"timeouts.idle", rf.Timeouts.Idle, &rc.idleTimeout, "no limit"},
		{"timeouts.run", rf.Timeouts.Run, &rc.runTimeout, "no limit"},
		{"timeouts.consumerStall", rf.Timeouts.ConsumerStall, &rc.consumerStallTimeout, "no limit"},
		{"timeouts.body", rf.Timeouts.Body, &rc.bodyTimeout, "no limit"},
		{"keepAlive", rf.KeepAlive, &rc.keepAlive, "none"},
	} {
		if *d.dst, err = durationField(d.raw, *d.dst, d.zero); err != nil {
			return rc, fmt.Errorf("%s: %v", d.name, err)
		}
	}
	if rc.maxBody, err = sizeField(rf.MaxBody, rc.maxBody); err != nil {
		return rc, fmt.Errorf("maxBody: %v", err)
	}
	if rc.maxFrame, err = sizeField(rf.MaxFrame, rc.maxFrame); err != nil {
		return rc, fmt.Errorf("maxFrame: %v", err)
	}
	if rc.maxConns, err = countField(rf.MaxConns, rc.maxConns); err != nil {
		return rc, fmt.Errorf("maxConns: %v", err)
	}
	if !absent(rf.UpstreamReuse) {
		var s string
		if json.Unmarshal(rf.UpstreamReuse, &s) != nil {
			s = string(rf.UpstreamReuse)
		}
		if rc.noReuse, err = upstreamReuse(s); err != nil {
			return rc, fmt.Errorf("upstreamReuse: %v", err)
		}
	}
	if rc.cors, err = corsField(rf.CORS, rc.cors); err != nil {
		return rc, fmt.Errorf("cors: %v", err)
	}
	return rc, nil
}

// upstreamReuse reads --upstream-reuse or a route's upstreamReuse: always
// keeps connections to the producer for later requests, never gives each
// request a new one (relay.ClientOptions.NoReuse).
func upstreamReuse(s string) (noReuse bool, err error) {
	switch s {
	case "always":
		return false, nil
	case "never":
		return true, nil
	}
	return false, fmt.Errorf("%q: want always (connections to the producer pooled for later requests) or never (a new connection for each request)", s)
}

// checkUpstream says what is wrong with a producer's base URL.
func checkUpstream(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want an absolute http(s) base URL without a query, such as http://127.0.0.1:8000/api", s)
	}
	return nil
}

func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// versionField reads a version written as a string, which names a release
// the relay knows; "" means unknown. also lists what else the field takes,
// for the error.
func versionField(raw json.RawMessage, def negotiate.Version, also ...string) (negotiate.Version, error) {
	if absent(raw) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return def, fmt.Errorf("%s: write the version as a string, \"1.0\" or \"0.0.45\" (YAML reads 1.0 unquoted as the number 1)", raw)
	}
	if s == "" {
		return negotiate.Version{}, nil
	}
	return negotiate.ParseKnown(s, also...)
}

// producerVersionField is versionField for a producer, which may also be
// named by its Python SDK release ("ag-ui-protocol@0.1.19", "py0.1.19"): the
// version is then the release's PyProfile.Events.
func producerVersionField(raw json.RawMessage, def negotiate.Version, defPy negotiate.PyRelease) (negotiate.Version, negotiate.PyRelease, error) {
	if absent(raw) {
		return def, defPy, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if v, py, named, err := parseProducer(s); named {
			return v, py, err
		}
	}
	v, err := versionField(raw, def, negotiate.KnownPyReleases())
	return v, negotiate.PyRelease{}, err
}

// parseProducer reads a Python release name; named is false for anything
// else (a protocol version or a TypeScript release, for negotiate.Parse).
func parseProducer(s string) (v negotiate.Version, py negotiate.PyRelease, named bool, err error) {
	py, named, err = negotiate.ParsePyRelease(s)
	if !named || err != nil {
		return negotiate.Version{}, negotiate.PyRelease{}, named, err
	}
	p, _ := negotiate.PyProfileOf(py)
	return p.Events, py, true, nil
}

// durationField reads a duration written as a string ("30s", "5m"; "0"
// disables), or the number 0; zero says what 0 means (see badDuration).
func durationField(raw json.RawMessage, def time.Duration, zero string) (time.Duration, error) {
	if absent(raw) {
		return def, nil
	}
	if string(raw) == "0" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return def, fmt.Errorf("%s: want a duration string such as \"30s\" or \"5m\"%s", raw, zeroMeans(zero))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return def, badDuration(s, zero)
	}
	return d, nil
}

// badDuration is the error of a duration s, as the user wrote it, that is
// none, or negative, in the routes file and the flags alike: a negative
// one would turn its limit off as silently as 0 does. zero is what 0
// means for it ("no limit", "none"), "" where 0 is no special value.
func badDuration(s, zero string) error {
	return fmt.Errorf("%q: want a duration such as \"30s\" or \"5m\"%s", s, zeroMeans(zero))
}

func zeroMeans(zero string) string {
	if zero == "" {
		return ""
	}
	return fmt.Sprintf(" (\"0\": %s)", zero)
}

// zeroUsage finds what 0 means in a flag's usage: "(0: no limit)".
var zeroUsage = regexp.MustCompile(`\(0: ([^)]+)\)`)

// negativeDuration refuses a duration flag of fs that args set below zero
// (badDuration), named and its value given as args have them (-d, --ramp).
func negativeDuration(fs *flag.FlagSet, args []string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && isNegativeDuration(f) {
			spelled, text, ok := flagText(args, f.Name)
			if !ok {
				spelled, text = "--"+f.Name, f.Value.String()
			}
			err = fmt.Errorf("%s %v", spelled, badDuration(text, durationZero(f)))
		}
	})
	return err
}

func isNegativeDuration(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	d, ok := g.Get().(time.Duration)
	return ok && d < 0
}

// durationZero is what 0 means for the duration flag f, as its usage says
// ("(0: no limit)"); "" when it says nothing.
func durationZero(f *flag.Flag) string {
	if m := zeroUsage.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	return ""
}

// flagText returns the value args give the flag name (-name v, --name v,
// -name=v, --name=v), the last one, which the flag package keeps, and the
// flag as spelled there (-name or --name).
func flagText(args []string, name string) (spelled, text string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		dashes := "-"
		if a[1] == '-' {
			dashes = "--"
		}
		a = a[len(dashes):]
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			spelled, text, found = dashes+name, v, true
		} else if a == name && i+1 < len(args) {
			spelled, text, found = dashes+name, args[i+1], true
			i++
		}
	}
	return spelled, text, found
}

// sizeField reads a size in bytes written as a positive number or a string
// with a KiB, MiB or GiB suffix, as the --max-body flag reads it.
func sizeField(raw json.RawMessage, def int) (int, error) {
	if absent(raw) {
		return def, nil
	}
	s := string(raw)
	if err := json.Unmarshal(raw, &s); err != nil && !isNumber(raw) {
		return def, fmt.Errorf("%s: want a positive size such as 65536, \"64KiB\" or \"10MiB\"", raw)
	}
	var b byteSize
	if err := b.Set(s); err != nil {
		return def, fmt.Errorf("%s: %v", raw, err)
	}
	return int(b), nil
}

// countField reads a positive whole number.
func countField(raw json.RawMessage, def int) (int, error) {
	if absent(raw) {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 {
		return def, fmt.Errorf("%s: want a positive whole number", raw)
	}
	return n, nil
}

func isNumber(raw json.RawMessage) bool {
	var n json.Number
	return json.Unmarshal(raw, &n) == nil
}

// relayShared is what the relays of every route share.
type relayShared struct {
	log   *zap.Logger
	quiet bool                                  // --quiet-translation-warnings
	tap   func(r *relay.RunReport) relay.RunTap // metrics and recording of every run; may be nil
	// requestTap traces the requests that are not runs; nil when tracing
	// is off.
	requestTap func(r *relay.RunReport) relay.RequestTap
	named      bool // log lines carry the route's name (with --config)
	// poller watches every route's consumers and parked streams, and
	// releases memory when they are all idle: one for the process.
	poller *relay.Poller
	// onUnsolicited counts the producer connections of a route discarded
	// for bytes outside any response (relay.ClientOptions.OnUnsolicited);
	// may be nil.
	onUnsolicited func(route string) func(addr string, n int)
}

// routeTable builds the relays of routes, each with its own client (so its
// own connection cap and timeouts) and its own logger.
func routeTable(routes []routeConfig, sh relayShared) (*relay.Table, error) {
	rs := make([]relay.Route, 0, len(routes))
	for _, rc := range routes {
		rlog := sh.log
		if sh.named {
			rlog = rlog.With(zap.String("route", rc.name))
		}
		var onUnsolicited func(addr string, n int)
		if sh.onUnsolicited != nil {
			onUnsolicited = sh.onUnsolicited(rc.name)
		}
		r := &relay.Relay{
			Upstream:    rc.upstream,
			Route:       rc.name,
			RoutePrefix: rc.prefix,
			Client: relay.NewClient(relay.ClientOptions{
				ConnectTimeout: negativeIfZero(rc.connectTimeout), FirstByteTimeout: negativeIfZero(rc.firstByteTimeout),
				MaxConns: rc.maxConns, NoReuse: rc.noReuse, Log: rlog, OnUnsolicited: onUnsolicited,
			}),
			ConsumerVersion: rc.consumerVersion,
			ProducerVersion: rc.producerVersion,
			ProducerPython:  rc.producerPython,
			MaxBody:         rc.maxBody,
			MaxFrame:        rc.maxFrame,
			IdleTimeout:     rc.idleTimeout,
			RunTimeout:      rc.runTimeout,
			KeepAlive:       rc.keepAlive,
			// The flag's 0 is no limit, the Relay's the default.
			ConsumerStallTimeout: negativeIfZero(rc.consumerStallTimeout),
			BodyTimeout:          negativeIfZero(rc.bodyTimeout),
			Log:                  rlog,
			Tap:                  sh.tap,
			RequestTap:           sh.requestTap,
			Poller:               sh.poller,
			ReuseGoroutines:      true,
		}
		r.QuietTranslationWarnings = sh.quiet
		if rc.stripPrefix && rc.prefix != "/" {
			r.StripPrefix = rc.prefix
		}
		var err error
		if r.CORS, err = newCORS(rc.cors); err != nil {
			return nil, fmt.Errorf("route %q: cors: %v", rc.name, err)
		}
		rs = append(rs, relay.Route{Name: rc.name, Prefix: rc.prefix, Relay: r})
	}
	return relay.NewTable(rs)
}
