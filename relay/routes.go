package relay

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// Route sends the requests whose path is Prefix, or lies below it, to
// Relay: one relay in front of several agents.
type Route struct {
	// Name identifies the route in logs and metrics.
	Name string
	// Prefix is "/" or a path without a trailing slash ("/agents/a"),
	// matched on segment boundaries ("/agents/a/run", not "/agents/ab")
	// against the path as sent, before percent-decoding, because that is
	// the path the relay forwards.
	Prefix string
	// Relay serves the route. Its fields must not change once the table is
	// in use.
	Relay *Relay
}

// Table is an immutable routing table. Several requests may use one at the
// same time; a Router swaps whole tables.
type Table struct {
	routes  []Route // longest prefix first
	maxBody int
	// refs counts the requests whose handler uses this table (Router.acquire).
	refs atomic.Int64
	// matched, when set, is called by each Match: a test's count
	// (export_test.go); nil otherwise.
	matched func()
}

// NewTable checks the routes and returns them as a table.
func NewTable(routes []Route) (*Table, error) {
	if len(routes) == 0 {
		return nil, errors.New("no routes")
	}
	t := &Table{routes: append([]Route(nil), routes...)}
	names, prefixes := map[string]bool{}, map[string]string{}
	for _, r := range t.routes {
		if r.Name == "" {
			return nil, fmt.Errorf("route with prefix %q: no name", r.Prefix)
		}
		if names[r.Name] {
			return nil, fmt.Errorf("route %q: the name is used twice", r.Name)
		}
		names[r.Name] = true
		if err := CheckPrefix(r.Prefix); err != nil {
			return nil, fmt.Errorf("route %q: prefix: %v", r.Name, err)
		}
		if other, ok := prefixes[r.Prefix]; ok {
			return nil, fmt.Errorf("route %q: prefix %q is route %q's already", r.Name, r.Prefix, other)
		}
		prefixes[r.Prefix] = r.Name
		if r.Relay == nil {
			return nil, fmt.Errorf("route %q: no relay", r.Name)
		}
		t.maxBody = max(t.maxBody, r.Relay.maxBody())
	}
	sort.SliceStable(t.routes, func(i, j int) bool { return len(t.routes[i].Prefix) > len(t.routes[j].Prefix) })
	return t, nil
}

// CheckPrefix says what is wrong with a route prefix, nil when nothing is.
func CheckPrefix(p string) error {
	switch {
	case p == "/":
		return nil
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: want an absolute path such as /agents/a", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%q: want no trailing slash (%q matches %q already)", p, strings.TrimSuffix(p, "/"), p+"…")
	case strings.ContainsAny(p, "?#% \t\r\n"):
		return fmt.Errorf("%q: want a plain path, without query, fragment, percent-escapes or spaces", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q: want no empty, . or .. segments", p)
		}
	}
	return nil
}

// Routes returns the table's routes, longest prefix first.
func (t *Table) Routes() []Route { return append([]Route(nil), t.routes...) }

// MaxBody is the largest MaxBody of the table's relays.
func (t *Table) MaxBody() int { return t.maxBody }

// Match returns the route of the longest prefix that path (as sent, without
// the query) lies at or below, nil when none does.
func (t *Table) Match(path []byte) *Route {
	if t.matched != nil {
		t.matched()
	}
	for i := range t.routes {
		if prefixMatches(t.routes[i].Prefix, path) {
			return &t.routes[i]
		}
	}
	return nil
}

func prefixMatches(prefix string, path []byte) bool {
	if prefix == "/" {
		return true
	}
	if len(path) < len(prefix) || string(path[:len(prefix)]) != prefix {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/'
}

// Router serves requests through a Table that can be replaced while it runs
// (a configuration reload). A request keeps the Relay of the table in force
// when it arrived until it ends. Retired tables are retained while any of their
// runs is in flight, so that Active and EndRuns still reach them.
type Router struct {
	// MaxBodiesInFlight is Relay.MaxBodiesInFlight for the Router's Server;
	// zero means four times the router's body limit. Set it before Server.
	MaxBodiesInFlight int

	maxBody int
	bodies  *bodyBudget
	log     *zap.Logger
	cur     atomic.Pointer[Table]
	srv     atomic.Pointer[fasthttp.Server]

	mu      sync.Mutex
	retired []*Table
}

// NewRouter returns a router serving t. maxBody bounds every request body,
// for this table and every later one (the server's limit cannot change
// while it runs); zero means t's largest MaxBody. log receives the server's
// errors; nil discards them.
func NewRouter(t *Table, maxBody int, log *zap.Logger) *Router {
	if log == nil {
		log = zap.NewNop()
	}
	rt := &Router{maxBody: max(maxBody, t.maxBody), log: log}
	rt.cur.Store(t)
	return rt
}

// MaxBody is the largest request body the router's server reads.
func (rt *Router) MaxBody() int { return rt.maxBody }

// Table returns the table in force.
func (rt *Router) Table() *Table { return rt.cur.Load() }

// Swap puts t in force for the requests that arrive from now on. It refuses
// a table whose MaxBody is over the router's.
func (rt *Router) Swap(t *Table) error {
	if t.maxBody > rt.maxBody {
		for _, r := range t.routes {
			if r.Relay.maxBody() > rt.maxBody {
				return fmt.Errorf("route %q: maxBody %d is above the %d bytes the relay started with; the server's limit cannot grow while it runs: restart to raise it", r.Name, r.Relay.maxBody(), rt.maxBody)
			}
		}
	}
	if s := rt.srv.Load(); s != nil {
		t.serveWith(s)
	}
	old := rt.cur.Swap(t)
	rt.mu.Lock()
	rt.retired = append(rt.retired, old)
	rt.mu.Unlock()
	rt.prune()
	return nil
}

// acquire takes the table in force for one request. Once the table is
// swapped out only requests counted before the swap use it: one counted
// after sees the new table on its second look and lets go.
func (rt *Router) acquire() *Table {
	for {
		t := rt.cur.Load()
		t.refs.Add(1)
		if rt.cur.Load() == t {
			return t
		}
		t.refs.Add(-1)
	}
}

// prune forgets the retired tables no request or run uses, and closes
// their idle connections to the producers.
func (rt *Router) prune() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	kept := rt.retired[:0]
	for _, t := range rt.retired {
		// A run is tracked by its Relay before its handler returns, so once
		// no handler uses t (read first), Active sees every run left.
		if t.refs.Load() > 0 || t.active() > 0 {
			kept = append(kept, t)
			continue
		}
		for _, r := range t.routes {
			if c, ok := r.Relay.Client.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
		}
	}
	clear(rt.retired[len(kept):])
	rt.retired = kept
}

func (t *Table) active() int {
	n := 0
	for _, r := range t.routes {
		n += r.Relay.Active()
	}
	return n
}

func (rt *Router) tables() []*Table {
	rt.prune()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]*Table{rt.cur.Load()}, rt.retired...)
}

// Active returns the number of runs streaming now, on every table.
func (rt *Router) Active() int {
	n := 0
	for _, t := range rt.tables() {
		n += t.active()
	}
	return n
}

// Retired returns the number of swapped-out tables that runs still use.
func (rt *Router) Retired() int { return len(rt.tables()) - 1 }

// EndRuns calls EndRuns on every relay of every table still in use.
func (rt *Router) EndRuns() {
	for _, t := range rt.tables() {
		for _, r := range t.routes {
			r.Relay.EndRuns()
		}
	}
}

// Handle serves one request with the relay of the route its path matches,
// or a 404 problem.
//
// The route is matched once, before the body is read (for its
// BodyTimeout), and serves the request unless a reload swapped the table
// meanwhile: a request uses the table in force once its body is read.
func (rt *Router) Handle(ctx *fasthttp.RequestCtx) {
	if servedInPlace(ctx) || refuseTransferCoding(ctx) {
		return
	}
	path := ctx.URI().PathOriginal()
	matchedIn := rt.Table()
	r := matchedIn.Match(path)
	timeout := DefaultBodyTimeout
	if r != nil {
		timeout = r.Relay.bodyTimeout()
	}
	var body heldBody
	if !rt.bodies.readBody(ctx, timeout, &body) {
		return
	}
	t := rt.acquire()
	defer t.refs.Add(-1)
	if t != matchedIn {
		r = t.Match(path) // swapped while the body was read
	}
	switch {
	case hasDotSegment(ctx.RequestURI()):
		// Whatever r is: "/agents/a/../b" must not reach route a's
		// producer as "/../b".
		problemDotSegment().Write(ctx)
	case r == nil:
		problemNoRoute(string(path)).Write(ctx)
	default:
		r.Relay.serve(ctx)
	}
	rt.bodies.done(ctx, &body)
}

// Server returns a fasthttp server for the router, as Relay.Server does.
func (rt *Router) Server() *fasthttp.Server {
	t := rt.Table()
	s := t.routes[0].Relay.Server()
	s.Handler = rt.Handle
	s.ErrorHandler = rt.serverError
	s.ExpectHandler = rt.expect
	s.MaxRequestBodySize = rt.maxBody
	s.Logger = zapPrintf{rt.log}
	rt.bodies = newBodyBudget(rt.MaxBodiesInFlight, rt.maxBody, s, rt.bodyTimeout)
	rt.bodies.install(s)
	rt.srv.Store(s)
	t.serveWith(s)
	return s
}

// bodyTimeout is the BodyTimeout of h's route, else DefaultBodyTimeout,
// for the body's first read, before the handler (bodyBudget.headerReceived):
// fasthttp's HeaderReceived has the header alone, no ctx to carry the
// route on to Handle, which matches it again.
func (rt *Router) bodyTimeout(h *fasthttp.RequestHeader) time.Duration {
	path := h.RequestURI()
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if r := rt.Table().Match(path); r != nil {
		return r.Relay.bodyTimeout()
	}
	return DefaultBodyTimeout
}

func (t *Table) serveWith(s *fasthttp.Server) {
	for _, r := range t.routes {
		r.Relay.serveNextWith(s)
	}
}

// expect is Relay.expect for the route the path matches.
func (rt *Router) expect(ctx *fasthttp.RequestCtx) int {
	r := rt.Table().Match(ctx.URI().PathOriginal())
	if r == nil {
		if p := expectProblem(ctx, rt.bodies, rt.maxBody); p != nil {
			p.Write(ctx)
			return p.Status
		}
		return fasthttp.StatusContinue
	}
	if p := rt.bodies.refusedBeforeContinue(ctx); p != nil {
		r.Relay.refuseUnread(ctx, p)
		return p.Status
	}
	return r.Relay.expect(ctx)
}

// serverError responds to a request the server could not read, through
// its route's Relay when it has one (CORS headers, a run's report).
func (rt *Router) serverError(ctx *fasthttp.RequestCtx, err error) {
	if servedInPlace(ctx) {
		return
	}
	p := rt.bodies.refusal(ctx, err)
	if p == nil {
		p = serverProblem(err, rt.maxBody)
	}
	if m := rt.Table().Match(ctx.URI().PathOriginal()); m != nil {
		m.Relay.refuseUnread(ctx, p)
		return
	}
	p.Write(ctx)
}

func problemNoRoute(path string) *Problem {
	return &Problem{Type: "urn:agui-relay:no-route", Title: "No route for this path", Status: fasthttp.StatusNotFound,
		Detail: fmt.Sprintf("the path %q is not at or below the prefix of any route of the relay's configuration", path)}
}
