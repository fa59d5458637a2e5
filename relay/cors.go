package relay

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// CORS is a route's cross-origin policy, for pages that call the relay
// with fetch from another origin (HttpAgent in the browser). The relay
// responds to preflights itself and puts the CORS headers on every
// response of the route, its own problems too, so that a page can read why
// a run was refused. The producer's Access-Control-* headers are removed:
// a browser rejects two of them.
//
// A nil *CORS does no CORS: preflights are proxied and the producer's
// headers pass through.
//
// A CORS is immutable once made by NewCORS; any number of requests may use
// it at once.
type CORS struct {
	anyOrigin   bool
	origins     map[string]struct{} // exact origins, "scheme://host[:port]"
	suffixes    []originSuffix      // "scheme://*.example.com[:port]"
	anyMethod   bool
	methods     string
	anyHeader   bool
	headers     string
	expose      string
	credentials bool
	maxAge      string // seconds; "" sends none
}

// originSuffix matches the origins of the subdomains of one host.
type originSuffix struct{ scheme, suffix, port string }

// CORSOptions configure a CORS. Lists take "*" alone for "any".
type CORSOptions struct {
	// AllowOrigins are the origins whose pages may read the responses:
	// "https://app.example.com", "https://*.example.com" for subdomains,
	// or "*". Required.
	AllowOrigins []string
	// AllowMethods are the methods a preflight allows; nil means
	// DefaultCORSMethods. "*" allows the method each preflight asks for.
	AllowMethods []string
	// AllowHeaders are the request headers a preflight allows; nil means
	// DefaultCORSHeaders. "*" echoes those each preflight asks for: a
	// literal "*" does not cover Authorization or credentialed requests.
	AllowHeaders []string
	// ExposeHeaders are the response headers, beyond the CORS-safelisted
	// ones, that the page may read; none by default.
	ExposeHeaders []string
	// AllowCredentials lets pages send cookies and HTTP authentication.
	// It needs listed origins: the Fetch standard refuses a credentialed
	// response to "*", and naming every origin would let any site act as
	// the user.
	AllowCredentials bool
	// MaxAge is how long a browser may cache a preflight's response; zero
	// sends no Access-Control-Max-Age (browsers then cache for 5 seconds).
	MaxAge time.Duration
}

// DefaultCORSMethods are the methods a CORS policy allows by default:
// HttpAgent's POST, and GET and HEAD for what else a page may ask.
func DefaultCORSMethods() []string { return []string{"GET", "HEAD", "POST"} }

// DefaultCORSHeaders are the request headers a CORS policy allows by
// default: what HttpAgent sends, and a bearer token.
func DefaultCORSHeaders() []string { return []string{"Accept", "Authorization", "Content-Type"} }

// NewCORS checks o and returns its policy.
func NewCORS(o CORSOptions) (*CORS, error) {
	c := &CORS{origins: map[string]struct{}{}, credentials: o.AllowCredentials}
	if len(o.AllowOrigins) == 0 {
		return nil, errors.New("allowed origins: none given (want origins such as https://app.example.com, or *)")
	}
	for _, s := range o.AllowOrigins {
		if s == "*" {
			c.anyOrigin = true
			continue
		}
		origin, suffix, err := parseOrigin(s)
		if err != nil {
			return nil, fmt.Errorf("allowed origins: %v", err)
		}
		if suffix != nil {
			c.suffixes = append(c.suffixes, *suffix)
		} else {
			c.origins[origin] = struct{}{}
		}
	}
	if c.anyOrigin && len(o.AllowOrigins) > 1 {
		return nil, errors.New("allowed origins: * stands alone (it allows every origin)")
	}
	if c.anyOrigin && c.credentials {
		return nil, errors.New("credentials with allowed origins *: browsers refuse a credentialed response to any origin (Fetch standard), and naming every origin would let any site act as the user; list the origins")
	}
	var err error
	if c.methods, c.anyMethod, err = corsList(o.AllowMethods, DefaultCORSMethods(), isToken); err != nil {
		return nil, fmt.Errorf("allowed methods: %v", err)
	}
	if c.headers, c.anyHeader, err = corsList(o.AllowHeaders, DefaultCORSHeaders(), isToken); err != nil {
		return nil, fmt.Errorf("allowed headers: %v", err)
	}
	var anyExposed bool
	if c.expose, anyExposed, err = corsList(o.ExposeHeaders, nil, isToken); err != nil {
		return nil, fmt.Errorf("exposed headers: %v", err)
	}
	if anyExposed {
		if c.credentials {
			return nil, errors.New("exposed headers *: a credentialed response reads it as a header named \"*\" (Fetch standard); list the headers")
		}
		c.expose = "*"
	}
	switch {
	case o.MaxAge < 0:
		return nil, fmt.Errorf("max age %v: want zero or more", o.MaxAge)
	case o.MaxAge > 0:
		c.maxAge = strconv.FormatInt(int64(max(o.MaxAge/time.Second, 1)), 10)
	}
	return c, nil
}

// parseOrigin returns an allowed origin as a browser sends it in Origin,
// or for a subdomain pattern the suffix it matches.
func parseOrigin(s string) (string, *originSuffix, error) {
	u, err := url.Parse(s)
	bad := func(why string) (string, *originSuffix, error) {
		return "", nil, fmt.Errorf("%q: %s (want scheme://host[:port], such as https://app.example.com or https://*.example.com)", s, why)
	}
	switch {
	case s == "null":
		return bad(`"null" is the origin of sandboxed and file pages, which any site can make`)
	case err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return bad("not an origin")
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		return bad("an origin has no path, query or fragment, nor a trailing slash")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return bad("the port is not a number from 1 to 65535")
		}
		if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = "" // a browser leaves the default port out of Origin
		}
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if rest == "" || strings.Contains(rest, "*") {
			return bad("a pattern is *. and a host")
		}
		return "", &originSuffix{scheme: scheme, suffix: "." + rest, port: port}, nil
	}
	if strings.Contains(host, "*") {
		return bad(`"*" stands alone, or as the first label of a host ("*.example.com")`)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	origin := scheme + "://" + host
	if port != "" {
		origin += ":" + port
	}
	return origin, nil, nil
}

// corsList joins a list for its header ("" for none); any reports "*".
func corsList(list, def []string, valid func(string) bool) (joined string, anyOf bool, err error) {
	if list == nil {
		list = def
	}
	for _, s := range list {
		if s == "*" {
			if len(list) > 1 {
				return "", false, errors.New("* stands alone")
			}
			return "", true, nil
		}
		if !valid(s) {
			return "", false, fmt.Errorf("%q is not a method or header name", s)
		}
	}
	return strings.Join(list, ", "), false, nil
}

// isToken reports whether s is an HTTP token (RFC 9110).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func (c *CORS) allows(origin []byte) bool {
	if len(origin) == 0 {
		return false
	}
	if c.anyOrigin {
		return true
	}
	if _, ok := c.origins[string(origin)]; ok {
		return true
	}
	if len(c.suffixes) == 0 {
		return false
	}
	u, err := url.Parse(string(origin))
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, s := range c.suffixes {
		if u.Scheme == s.scheme && u.Port() == s.port && len(host) > len(s.suffix) && strings.HasSuffix(host, s.suffix) {
			return true
		}
	}
	return false
}

// The CORS response headers, which the relay's policy replaces.
var corsResponseHeaders = []string{
	"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Expose-Headers",
	"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age",
	"Access-Control-Allow-Private-Network",
}

func isPreflight(ctx *fasthttp.RequestCtx) bool {
	return ctx.IsOptions() && len(ctx.Request.Header.Peek("Origin")) > 0 &&
		len(ctx.Request.Header.Peek("Access-Control-Request-Method")) > 0
}

// preflight responds 204 to a preflight, with the policy's headers when
// the origin is allowed, and reports whether ctx was one. A nil c does
// nothing.
func (c *CORS) preflight(ctx *fasthttp.RequestCtx) bool {
	if c == nil || !isPreflight(ctx) {
		return false
	}
	ctx.Response.Reset()
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	h := &ctx.Response.Header
	h.Add(fasthttp.HeaderVary, "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
	origin := ctx.Request.Header.Peek("Origin")
	if !c.allows(origin) {
		return true
	}
	c.setOrigin(h, origin)
	if c.anyMethod {
		h.SetBytesV("Access-Control-Allow-Methods", ctx.Request.Header.Peek("Access-Control-Request-Method"))
	} else {
		h.Set("Access-Control-Allow-Methods", c.methods)
	}
	if c.anyHeader {
		if asked := ctx.Request.Header.Peek("Access-Control-Request-Headers"); len(asked) > 0 {
			h.SetBytesV("Access-Control-Allow-Headers", asked)
		}
	} else if c.headers != "" {
		h.Set("Access-Control-Allow-Headers", c.headers)
	}
	if c.maxAge != "" {
		h.Set("Access-Control-Max-Age", c.maxAge)
	}
	return true
}

// apply puts the policy's headers on ctx's response, in place of the
// producer's, and adds Origin to Vary. A nil c does nothing.
func (c *CORS) apply(ctx *fasthttp.RequestCtx) {
	if c == nil {
		return
	}
	h := &ctx.Response.Header
	for _, k := range corsResponseHeaders {
		h.Del(k)
	}
	if !varies(h) {
		h.Add(fasthttp.HeaderVary, "Origin")
	}
	origin := ctx.Request.Header.Peek("Origin")
	if !c.allows(origin) {
		return
	}
	c.setOrigin(h, origin)
	if c.expose != "" {
		h.Set("Access-Control-Expose-Headers", c.expose)
	}
}

func (c *CORS) setOrigin(h *fasthttp.ResponseHeader, origin []byte) {
	if c.anyOrigin && !c.credentials {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.SetBytesV("Access-Control-Allow-Origin", origin)
	}
	if c.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}

// varies reports whether a Vary line names Origin or "*".
func varies(h *fasthttp.ResponseHeader) bool {
	for _, v := range h.PeekAll(fasthttp.HeaderVary) {
		for f := range bytes.SplitSeq(v, []byte(",")) {
			f = bytes.TrimSpace(f)
			if bytes.EqualFold(f, []byte("Origin")) || bytes.Equal(f, []byte("*")) {
				return true
			}
		}
	}
	return false
}
