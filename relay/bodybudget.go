package relay

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The server reads a request's body whole before the handler runs, and
// --max-body bounds one body only: bodies read at once could together take
// any amount of memory (issue #31: eight 60 MB bodies, 739 MiB). A
// bodyBudget bounds their sum. Each body claims its bytes once its head is
// read (the server's HeaderReceived), before any of it is: a claim that
// does not fit is refused with 503 and Retry-After, without reading the
// body, and the connection is closed. A body of known length claims its
// Content-Length (the server allocates that much at once). A chunked one
// may grow to what the budget has free when its head arrives, up to
// --max-body: it claims that cap while it is read, is refused with 503
// when it outgrows a cap below --max-body (413 above, as any body), and
// keeps only its length once read. The claim is given back when the
// handler returns (the body was forwarded, or refused), or when the
// server could not read the body (its ErrorHandler).
//
// The server's hooks see a request's header, not its connection: claims
// are kept by the header, which is the request's for as long as it is
// served. A read that failed without the server's ErrorHandler (the
// client closed the connection at a chunk's start, the server closed it)
// leaves its claim behind: such a claim is dropped when its header serves
// another request, or, once the budget is short, when it is older than the
// server's read timeout, by which any read of a body has ended.

// bodyBudget bounds the bytes of request bodies a server holds at once.
type bodyBudget struct {
	limit   int // bytes of bodies held at once
	maxBody int // the server's limit of one body (MaxRequestBodySize)
	srv     *fasthttp.Server

	count atomic.Int32 // len(claims), read without mu where no claim of the request's own can be missed

	mu        sync.Mutex
	held      int
	claims    map[*fasthttp.RequestHeader]bodyClaim
	lastSweep time.Time // sweepLocked walks every claim: once a second at most
}

// bodyClaim is what one request's body holds of the budget.
type bodyClaim struct {
	n       int       // bytes held
	capped  bool      // a chunked body whose cap, n, is below maxBody: outgrowing it is the budget's refusal
	refused bool      // the claim did not fit: the request is answered 503 unread
	seen    bool      // a handler serves the request: it releases the claim
	at      time.Time // when the claim was made
}

// newBodyBudget returns the budget of srv, whose body limit is maxBody:
// limit bytes, four times maxBody when zero.
func newBodyBudget(limit, maxBody int, srv *fasthttp.Server) *bodyBudget {
	if limit <= 0 {
		limit = 4 * maxBody
	}
	return &bodyBudget{limit: max(limit, maxBody), maxBody: maxBody, srv: srv, claims: map[*fasthttp.RequestHeader]bodyClaim{}}
}

// install hooks the budget into srv: its HeaderReceived claims, its
// Handler releases once it returns. The server's ErrorHandler must ask
// refusal first, and its ExpectHandler refusedBeforeContinue, and release
// the claim of a body it refuses (the handler is not called then).
func (b *bodyBudget) install(s *fasthttp.Server) {
	s.HeaderReceived = b.headerReceived
	next := s.Handler
	s.Handler = func(ctx *fasthttp.RequestCtx) {
		if b.count.Load() == 0 { // this request's claim, if any, was counted on this goroutine
			next(ctx)
			return
		}
		h := &ctx.Request.Header
		b.serving(h, len(ctx.Request.Body()))
		next(ctx)
		b.release(h)
	}
}

// headerReceived claims the body of the request whose head is h, before
// the server reads it (fasthttp's HeaderReceived).
func (b *bodyBudget) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	n := h.ContentLength()
	chunked := n == -1
	if b.count.Load() == 0 && (n <= 0 && !chunked || n > b.maxBody) {
		return fasthttp.RequestConfig{} // no body, or one the server refuses with 413 unread
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropLocked(h) // left by the header's last request, whose read failed unseen
	if n <= 0 && !chunked || n > b.maxBody {
		return fasthttp.RequestConfig{}
	}
	now := time.Now()
	if b.limit-b.held < n || chunked && b.limit-b.held < b.maxBody {
		b.sweepLocked(now)
	}
	c := bodyClaim{n: n, at: now}
	if chunked {
		c.n = min(b.maxBody, b.limit-b.held)
		c.capped = c.n < b.maxBody
	}
	if c.n <= 0 || b.limit-b.held < c.n {
		// Refused unread: a length over the server's limit makes it answer
		// at once (ErrBodyTooLarge, or the ExpectHandler for a request that
		// waits for 100 Continue), and close the connection; refusal and
		// refusedBeforeContinue answer 503 instead.
		b.claims[h] = bodyClaim{refused: true, at: now}
		b.count.Add(1)
		h.SetContentLength(b.maxBody + 1)
		return fasthttp.RequestConfig{}
	}
	b.held += c.n
	b.claims[h] = c
	b.count.Add(1)
	if chunked {
		return fasthttp.RequestConfig{MaxRequestBodySize: c.n}
	}
	return fasthttp.RequestConfig{}
}

// serving notes that a handler serves the request of h, whose body of
// length n was read: a chunked body's claim shrinks to n.
func (b *bodyBudget) serving(h *fasthttp.RequestHeader, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.claims[h]
	if !ok {
		return
	}
	if n < c.n {
		b.held -= c.n - n
		c.n = n
	}
	c.seen = true
	b.claims[h] = c
}

// release gives back the claim of the request of h, if it has one.
func (b *bodyBudget) release(h *fasthttp.RequestHeader) (bodyClaim, bool) {
	if b == nil || b.count.Load() == 0 {
		return bodyClaim{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropLocked(h)
}

func (b *bodyBudget) dropLocked(h *fasthttp.RequestHeader) (bodyClaim, bool) {
	c, ok := b.claims[h]
	if ok {
		delete(b.claims, h)
		b.count.Add(-1)
		b.held -= c.n
	}
	return c, ok
}

// sweepLocked drops the claims whose read failed without a word to the
// relay: no handler saw them, and the server's read timeout, which bounds
// the read of a request from its start, is past. A claim goes stale after
// that timeout (minutes): a sweep a second is soon enough, and keeps a
// budget short under load from walking every claim per request.
func (b *bodyBudget) sweepLocked(now time.Time) {
	timeout := b.srv.ReadTimeout
	if timeout <= 0 || now.Sub(b.lastSweep) < time.Second {
		return
	}
	b.lastSweep = now
	for h, c := range b.claims {
		if !c.seen && now.Sub(c.at) > timeout {
			b.dropLocked(h)
		}
	}
}

// inFlight returns the bytes claimed now.
func (b *bodyBudget) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// refusal gives back the claim of a request the server could not read
// (err, its ErrorHandler) and returns the budget's 503 when the budget
// refused it, nil otherwise.
func (b *bodyBudget) refusal(ctx *fasthttp.RequestCtx, err error) *Problem {
	if b == nil {
		return nil
	}
	c, ok := b.release(&ctx.Request.Header)
	if ok && (c.refused || c.capped && errors.Is(err, fasthttp.ErrBodyTooLarge)) {
		return b.problem()
	}
	return nil
}

// refusedBeforeContinue returns the budget's 503 for a request that waits
// for 100 Continue and whose body the budget refused (its claim given
// back: the body is never read), nil otherwise.
func (b *bodyBudget) refusedBeforeContinue(ctx *fasthttp.RequestCtx) *Problem {
	if b == nil || b.count.Load() == 0 {
		return nil
	}
	h := &ctx.Request.Header
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.claims[h]; !ok || !c.refused {
		return nil
	}
	b.dropLocked(h)
	return b.problem()
}

// retryAfter is the Retry-After of the budget's 503, in seconds: bodies
// are mostly read and forwarded within one.
const retryAfter = 1

func (b *bodyBudget) problem() *Problem {
	return &Problem{Type: ProblemBodiesInFlight, Title: "Too many request bodies in flight", Status: fasthttp.StatusServiceUnavailable,
		Detail:     "the relay holds at most " + strconv.Itoa(b.limit) + " bytes of request bodies at once (--max-bodies-in-flight); retry shortly",
		retryAfter: retryAfter}
}

// ProblemBodiesInFlight is the problem type of a request refused because
// the bodies the relay holds at once would be over its budget.
const ProblemBodiesInFlight = "urn:agui-relay:bodies-in-flight"
