package relay

import (
	"encoding/json"
	"strconv"

	"github.com/valyala/fasthttp"
)

// The problem types a RunReport's Problem is told apart by (metrics).
const (
	ProblemInvalidInput    = "urn:agui-relay:invalid-input"
	ProblemUnreachable     = "urn:agui-relay:upstream-unreachable"
	ProblemUpstreamTimeout = "urn:agui-relay:upstream-timeout"
	ProblemBusy            = "urn:agui-relay:upstream-busy"
	ProblemUpgrade         = "urn:agui-relay:upstream-upgrade"
)

// Problem is an error response before the stream starts, an RFC 9457
// application/problem+json document.
type Problem struct {
	// Type is a URI naming the kind of problem ("urn:agui-relay:…").
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Errors lists what is wrong with a malformed input.
	Errors []InputError `json:"errors,omitempty"`

	retryAfter int // seconds; above 0, the response carries Retry-After
}

// InputError is one located problem of a RunAgentInput.
type InputError struct {
	// Pointer locates the value (RFC 6901), "" for the whole document.
	Pointer string `json:"pointer"`
	// Reason says what is wrong, in a few words.
	Reason string `json:"reason"`
}

func problemInput(errs []InputError) *Problem {
	return &Problem{Type: ProblemInvalidInput, Title: "The RunAgentInput is malformed", Status: fasthttp.StatusBadRequest,
		Detail: "the producer was not contacted", Errors: errs}
}

func problemTooLarge(limit int) *Problem {
	return &Problem{Type: "urn:agui-relay:body-too-large", Title: "The request body is too large", Status: fasthttp.StatusRequestEntityTooLarge,
		Detail: "the relay accepts request bodies up to " + strconv.Itoa(limit) + " bytes (--max-body)"}
}

func problemUnreachable(err error) *Problem {
	return &Problem{Type: ProblemUnreachable, Title: "The producer cannot be reached", Status: fasthttp.StatusBadGateway,
		Detail: err.Error()}
}

func problemUpstreamTimeout(err error) *Problem {
	return &Problem{Type: ProblemUpstreamTimeout, Title: "The producer did not respond in time", Status: fasthttp.StatusGatewayTimeout,
		Detail: err.Error()}
}

func problemBusy(err error) *Problem {
	return &Problem{Type: ProblemBusy, Title: "Too many runs in flight to the producer", Status: fasthttp.StatusServiceUnavailable,
		Detail: err.Error()}
}

// problemUpgrade is the response to a producer's 101: the relay drops the
// consumer's Upgrade header as hop-by-hop and tunnels nothing.
func problemUpgrade() *Problem {
	return &Problem{Type: ProblemUpgrade, Title: "The producer switched protocols", Status: fasthttp.StatusBadGateway,
		Detail: "the producer responded 101 Switching Protocols; the relay does not tunnel upgraded connections, and a run's response is an event stream"}
}

func problemShuttingDown() *Problem {
	return &Problem{Type: "urn:agui-relay:shutting-down", Title: "The relay is shutting down", Status: fasthttp.StatusServiceUnavailable}
}

// Write responds with the problem, replacing any response begun.
func (p *Problem) Write(ctx *fasthttp.RequestCtx) {
	b, err := json.Marshal(p)
	if err != nil { // cannot happen: strings and ints only
		b = []byte(`{"type":"about:blank","status":500}`)
	}
	ctx.Response.Reset()
	ctx.SetStatusCode(p.Status)
	ctx.SetContentType("application/problem+json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if p.retryAfter > 0 {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, strconv.Itoa(p.retryAfter))
	}
	ctx.SetBody(b)
}

func problemTarget() *Problem {
	return &Problem{Type: "urn:agui-relay:bad-target", Title: "The request target is not a path", Status: fasthttp.StatusBadRequest,
		Detail: `the relay forwards to its configured upstream only: send a path ("/agent?x=1"), not a URL, an authority or "*"`}
}
