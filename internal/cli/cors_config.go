package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/relay"
)

// CORS configuration: the --cors-* flags and a route's cors option. A
// policy without allowed origins is off (the relay does no CORS).

// listFlag is a flag holding a comma-separated list ("a, b" or "a,b").
type listFlag struct{ dst *[]string }

func (l listFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l listFlag) Set(s string) error {
	*l.dst = splitList(s)
	return nil
}

func splitList(s string) []string {
	out := []string{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// corsFlags defines the --cors-* flags, with their defaults in o.
func corsFlags(fs *flag.FlagSet, o *relay.CORSOptions) {
	o.AllowMethods = relay.DefaultCORSMethods()
	o.AllowHeaders = relay.DefaultCORSHeaders()
	o.ExposeHeaders = []string{}
	o.MaxAge = 10 * time.Minute
	fs.Var(listFlag{&o.AllowOrigins}, "cors-allow-origins", "answer CORS preflights at the relay and put CORS headers on every response, its own problems included, for pages of\nthese origins (comma-separated, such as https://app.example.com,https://*.example.com), or * for any.\nEmpty: no CORS at the relay; the producer's CORS headers pass through and the relay's own errors carry none")
	fs.Var(listFlag{&o.AllowMethods}, "cors-allow-methods", "with --cors-allow-origins: the methods a preflight allows (* allows the one asked for)")
	fs.Var(listFlag{&o.AllowHeaders}, "cors-allow-headers", "with --cors-allow-origins: the request headers a preflight allows (* allows the ones asked for)")
	fs.Var(listFlag{&o.ExposeHeaders}, "cors-expose-headers", "with --cors-allow-origins: response headers the page may read beyond the safelisted ones (* for any, without credentials)")
	fs.BoolVar(&o.AllowCredentials, "cors-allow-credentials", false, "with --cors-allow-origins: let pages send cookies and HTTP authentication (needs listed origins, not *)")
	fs.DurationVar(&o.MaxAge, "cors-max-age", o.MaxAge, "with --cors-allow-origins: how long a browser may cache a preflight's response (0: not sent)")
}

// checkCORS says what is wrong with a policy that is on.
func checkCORS(o relay.CORSOptions) error {
	if len(o.AllowOrigins) == 0 {
		return nil
	}
	_, err := relay.NewCORS(o)
	return err
}

// newCORS returns the policy of o, nil when it is off.
func newCORS(o relay.CORSOptions) (*relay.CORS, error) {
	if len(o.AllowOrigins) == 0 {
		return nil, nil
	}
	return relay.NewCORS(o)
}

// corsFile is a route's cors option. Each key left out takes the flag's
// value; allowOrigins: [] turns CORS off for the route.
type corsFile struct {
	AllowOrigins     json.RawMessage `json:"allowOrigins"`
	AllowMethods     json.RawMessage `json:"allowMethods"`
	AllowHeaders     json.RawMessage `json:"allowHeaders"`
	ExposeHeaders    json.RawMessage `json:"exposeHeaders"`
	AllowCredentials *bool           `json:"allowCredentials"`
	MaxAge           json.RawMessage `json:"maxAge"`
}

// corsField reads a route's cors option over the flags' policy def.
func corsField(raw json.RawMessage, def relay.CORSOptions) (relay.CORSOptions, error) {
	o := def
	if absent(raw) {
		return o, nil
	}
	var f corsFile
	if err := decodeStrict(raw, &f); err != nil {
		return o, err
	}
	for _, l := range []struct {
		name string
		raw  json.RawMessage
		dst  *[]string
	}{
		{"allowOrigins", f.AllowOrigins, &o.AllowOrigins},
		{"allowMethods", f.AllowMethods, &o.AllowMethods},
		{"allowHeaders", f.AllowHeaders, &o.AllowHeaders},
		{"exposeHeaders", f.ExposeHeaders, &o.ExposeHeaders},
	} {
		if err := listField(l.raw, l.dst); err != nil {
			return o, fmt.Errorf("%s: %v", l.name, err)
		}
	}
	if f.AllowCredentials != nil {
		o.AllowCredentials = *f.AllowCredentials
	}
	var err error
	if o.MaxAge, err = durationField(f.MaxAge, o.MaxAge, "not sent"); err != nil {
		return o, fmt.Errorf("maxAge: %v", err)
	}
	if err := checkCORS(o); err != nil {
		return o, err
	}
	return o, nil
}

// listField reads a list written as a list of strings or as one string
// ("*", or comma-separated); absent leaves dst as it is.
func listField(raw json.RawMessage, dst *[]string) error {
	if absent(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		*dst = splitList(s)
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return errors.New(string(raw) + `: want a list of strings, or one string ("*", or comma-separated)`)
	}
	*dst = list
	return nil
}
