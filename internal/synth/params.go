package synth

import (
	"fmt"
	"net/url"
	"strconv"
)

// RunParams are what a consumer asks the synthetic producer for. The bench
// carries them in the request's query string, so that any proxy passes them
// on; the demo agent reads the same keys from the query or from
// forwardedProps.demo:
//
//	/run?dialect=1.0&events=1000&rate=0&delta=64&tools=0&reasoning=0
//	/run?dialect=1.0&events=40004&rate=0&text=1&subagent=10
type RunParams struct {
	Dialect Dialect
	Events  int     // events per run, RUN_STARTED and RUN_FINISHED included
	Rate    float64 // events per second; 0 is as fast as possible
	// Idle sends RUN_STARTED, then waits for Producer.ReleaseIdle (or the
	// connection's end) before RUN_FINISHED.
	Idle bool
	// Delta is the length in bytes of each content delta's text, before its
	// stamp; 0 is two words (about 20 bytes).
	Delta int
	Mix
}

// Limits of what a run may ask for: a request cannot make the producer
// allocate or loop without bound.
const (
	MaxEvents = 100_000_000
	MaxDelta  = 1 << 20
)

// DefaultEvents is the length of a run that names none.
const DefaultEvents = 100

// Query returns the query string that asks for p; members at their default
// are left out, except the three the bench always names.
func (p RunParams) Query() string {
	q := url.Values{}
	q.Set("dialect", p.Dialect.String())
	if p.Events > 0 {
		q.Set("events", strconv.Itoa(p.Events))
	}
	q.Set("rate", strconv.FormatFloat(p.Rate, 'f', -1, 64))
	if p.Idle {
		q.Set("idle", "1")
	}
	if p.Delta > 0 {
		q.Set("delta", strconv.Itoa(p.Delta))
	}
	if p.NoTools {
		q.Set("tools", "0")
	}
	if p.NoReasoning {
		q.Set("reasoning", "0")
	}
	if p.NoSubagents {
		q.Set("subagents", "0")
	}
	if p.NoState {
		q.Set("state", "0")
	}
	if p.TextOnly {
		q.Set("text", "1")
	}
	if p.SubagentEvery > 0 {
		q.Set("subagent", strconv.Itoa(p.SubagentEvery))
	}
	return q.Encode()
}

// Path returns the request path that asks for p.
func (p RunParams) Path() string { return "/run?" + p.Query() }

// ParseRunParams reads the parameters from a request target.
func ParseRunParams(target string) (RunParams, error) {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return RunParams{}, err
	}
	q := u.Query()
	return ParamsFrom(q.Get)
}

// ParamsFrom reads the parameters by key (dialect, events, rate, idle,
// delta, tools, reasoning, subagents, state, text, subagent) from get, which returns "" for a key not given.
// A value out of range or not a number is an error naming the key.
func ParamsFrom(get func(key string) string) (RunParams, error) {
	p := RunParams{Dialect: ParseDialect(get("dialect")), Events: DefaultEvents}
	var err error
	if v := get("events"); v != "" {
		if p.Events, err = strconv.Atoi(v); err != nil || p.Events < 2 || p.Events > MaxEvents {
			return p, fmt.Errorf("events: %q is not a whole number from 2 (RUN_STARTED and RUN_FINISHED) to %d", v, MaxEvents)
		}
	}
	if v := get("rate"); v != "" {
		if p.Rate, err = strconv.ParseFloat(v, 64); err != nil || p.Rate < 0 || p.Rate != p.Rate {
			return p, fmt.Errorf("rate: %q is not a number of events per second (0: as fast as possible)", v)
		}
	}
	if v := get("delta"); v != "" {
		if p.Delta, err = strconv.Atoi(v); err != nil || p.Delta < 0 || p.Delta > MaxDelta {
			return p, fmt.Errorf("delta: %q is not a length in bytes from 0 to %d", v, MaxDelta)
		}
	}
	if v := get("subagent"); v != "" {
		if p.SubagentEvery, err = strconv.Atoi(v); err != nil || p.SubagentEvery < 0 || p.SubagentEvery > MaxEvents {
			return p, fmt.Errorf("subagent: %q is not a whole number of events from 0 to %d", v, MaxEvents)
		}
	}
	flag := func(key string, dst *bool, invert bool) error {
		switch v := get(key); v {
		case "":
		case "1", "true":
			*dst = !invert
		case "0", "false":
			*dst = invert
		default:
			return fmt.Errorf("%s: %q is not 1 or 0", key, v)
		}
		return nil
	}
	for _, e := range []error{flag("idle", &p.Idle, false), flag("tools", &p.NoTools, true), flag("reasoning", &p.NoReasoning, true), flag("subagents", &p.NoSubagents, true), flag("state", &p.NoState, true), flag("text", &p.TextOnly, false)} {
		if e != nil {
			return p, e
		}
	}
	return p, nil
}
