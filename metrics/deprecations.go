package metrics

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/rules"
)

// deprecation is one registry entry and what the relay saw of it.
type deprecation struct {
	rules.Deprecation
	norm string // Shape without the [] of arrays

	runs     int64
	lastSeen time.Time
	users    map[depUser]*depUserUse
}

type depUser struct{ route, from, to string }

type depUserUse struct {
	runs     int64
	lastSeen time.Time
}

func (d *deprecation) use(route, from, to string, now time.Time) {
	d.runs++
	d.lastSeen = now
	if d.users == nil {
		d.users = map[depUser]*depUserUse{}
	}
	k := depUser{route, from, to}
	u := d.users[k]
	if u == nil {
		u = &depUserUse{}
		d.users[k] = u
	}
	u.runs++
	u.lastSeen = now
}

// expiryCollector exports, at each scrape, the seconds until each registry
// entry's translation expires (negative once it has).
type expiryCollector struct{ m *Metrics }

var expiryDesc = prometheus.NewDesc("agui_relay_deprecation_expiry_seconds",
	"Seconds until the translation of a retired shape of the deprecation registry may be removed (negative once expired); see agui_relay_deprecated_shape_runs_total for who still needs it.",
	[]string{"shape", "step", "retired", "expires"}, nil)

func (c expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c expiryCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.m.now()
	for i := range c.m.deps {
		d := &c.m.deps[i]
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, d.Expires.Sub(now).Seconds(),
			d.Shape, d.Step, d.Retired.String(), d.Expires.Format(time.DateOnly))
	}
}

// DeprecationUsage is one registry entry with its live usage: the JSON of
// the admin endpoint GET /deprecations (see DeprecationsHandler).
type DeprecationUsage struct {
	Shape       string `json:"shape"`
	Replacement string `json:"replacement"`
	Step        string `json:"step"`
	Retired     string `json:"retired"`
	// Expires is the day the translation may be removed (YYYY-MM-DD);
	// ExpiresInSeconds counts down to it (negative once passed) and Live
	// says the translation still runs.
	Expires          string  `json:"expires"`
	ExpiresInSeconds float64 `json:"expiresInSeconds"`
	Live             bool    `json:"live"`
	// Runs counts the runs since the relay started that needed the
	// translation (once per run); LastSeen is the last one.
	Runs     int64      `json:"runs"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	// Users says who needed it: route and version pair (from: the
	// producer's version, "unknown" when it predates protocolVersion; to:
	// the consumer's).
	Users []DeprecationUser `json:"users"`
}

// DeprecationUser is one route and version pair that needed a retired
// shape's translation.
type DeprecationUser struct {
	Route    string    `json:"route"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Runs     int64     `json:"runs"`
	LastSeen time.Time `json:"lastSeen"`
}

// DeprecationsReport is the body of GET /deprecations.
type DeprecationsReport struct {
	Now          time.Time          `json:"now"`
	Deprecations []DeprecationUsage `json:"deprecations"`
}

// Deprecations returns the registry with the usage seen so far, in
// registry order (by shape); users are sorted by route and versions.
func (m *Metrics) Deprecations() DeprecationsReport {
	now := m.now()
	out := DeprecationsReport{Now: now.UTC(), Deprecations: make([]DeprecationUsage, 0, len(m.deps))}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.deps {
		d := &m.deps[i]
		u := DeprecationUsage{
			Shape: d.Shape, Replacement: d.Replacement, Step: d.Step, Retired: d.Retired.String(),
			Expires: d.Expires.Format(time.DateOnly), ExpiresInSeconds: d.Expires.Sub(now).Seconds(),
			Live: d.LiveAt(now), Runs: d.runs, Users: []DeprecationUser{},
		}
		if d.runs > 0 {
			ls := d.lastSeen.UTC()
			u.LastSeen = &ls
		}
		for k, v := range d.users {
			u.Users = append(u.Users, DeprecationUser{Route: k.route, From: k.from, To: k.to, Runs: v.runs, LastSeen: v.lastSeen.UTC()})
		}
		sort.Slice(u.Users, func(a, b int) bool {
			x, y := u.Users[a], u.Users[b]
			if x.Route != y.Route {
				return x.Route < y.Route
			}
			if x.From != y.From {
				return x.From < y.From
			}
			return x.To < y.To
		})
		out.Deprecations = append(out.Deprecations, u)
	}
	return out
}

// DeprecationsHandler serves Deprecations as JSON (GET /deprecations on the
// admin server; `agui-relay versions --admin URL` reads it).
func (m *Metrics) DeprecationsHandler() fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsGet() && !ctx.IsHead() {
			ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
			ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
			return
		}
		b, err := json.MarshalIndent(m.Deprecations(), "", "  ")
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
			return
		}
		ctx.SetContentType("application/json")
		ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
		ctx.SetBody(append(b, '\n'))
	}
}
