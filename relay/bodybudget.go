package relay

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// --max-body bounds one request body; a bodyBudget bounds the bytes of
// the bodies the server holds at once, all connections together (issue
// #31: eight 60 MB bodies, 739 MiB).
//
// The budget holds what the bodies received take, not what their heads
// announce (issue #39: four heads with a chunked body, or a Content-Length
// of 64 MiB and one byte, held the whole budget and denied every run). The
// server streams request bodies (StreamRequestBody) and the budget's
// handler reads each one before the relay's handler runs: into a buffer
// that grows with what arrived, by half again (16 KiB at first), each
// growth claimed before it is made. A growth that does not fit is refused
// with 503 and Retry-After, and the connection closed; so is, from its
// head alone, a body whose Content-Length is over what is free (it could
// not be read whole now), before 100 Continue when it waits for one. The
// claim is given back when the handler returns.
//
// A body that stops arriving is cut: no byte of it for the route's
// BodyTimeout (within an eighth) answers 408 and closes the connection, as
// nginx's client_body_timeout does (between two reads, not for the whole
// body). The server's ReadTimeout still bounds the whole request, head and
// body, from its start.

// bodyBudget bounds the bytes of request bodies a server holds at once,
// and reads them.
type bodyBudget struct {
	limit   int // bytes of bodies held at once
	maxBody int // the server's limit of one body
	srv     *fasthttp.Server
	// timeout is the body timeout of a request by its head (the route's);
	// at most zero: none but the server's ReadTimeout.
	timeout func(*fasthttp.RequestHeader) time.Duration

	bufs sync.Pool // *[]byte of cap firstBuf: the first buffer of a body

	mu   sync.Mutex
	held int
	// refused holds the requests refused from their heads (headerReceived)
	// until their handler answers them; count is len(refused), read
	// without mu where no entry of the request's own can be missed (it
	// was made on this goroutine). An entry whose handler never ran (the
	// server failed the request first) goes when its header serves the
	// next request.
	refused map[*fasthttp.RequestHeader]error
	count   atomic.Int32
}

// firstBuf is the buffer a body is first read into, claimed before any of
// it arrived; it grows by half from there: a body takes at most half
// again what came (a doubling would take twice, and leave 100 uploads of
// just over 1 MiB 200 MiB of the default 256 MiB budget).
const firstBuf = 16 << 10

// newBodyBudget returns the budget of srv, whose body limit is maxBody:
// limit bytes, four times maxBody when zero. timeout gives a request's body
// timeout (nil: DefaultBodyTimeout).
func newBodyBudget(limit, maxBody int, srv *fasthttp.Server, timeout func(*fasthttp.RequestHeader) time.Duration) *bodyBudget {
	if limit <= 0 {
		limit = 4 * maxBody
	}
	if timeout == nil {
		timeout = func(*fasthttp.RequestHeader) time.Duration { return DefaultBodyTimeout }
	}
	return &bodyBudget{limit: max(limit, maxBody), maxBody: maxBody, srv: srv, timeout: timeout, refused: map[*fasthttp.RequestHeader]error{}}
}

// install hooks the budget into srv: the server streams request bodies,
// and its Handler is called once the budget's handler has read the body
// whole (Request.Body). A body that cannot be read (too large, over the
// budget, stalled, malformed) goes to the server's ErrorHandler, whose
// refusal must be asked first.
func (b *bodyBudget) install(s *fasthttp.Server) {
	s.StreamRequestBody = true
	s.HeaderReceived = b.headerReceived
	next := s.Handler
	s.Handler = func(ctx *fasthttp.RequestCtx) {
		if servedInPlace(ctx) || refuseTransferCoding(ctx) {
			return
		}
		err := b.refusedHead(&ctx.Request.Header)
		if err == nil && !ctx.Request.IsBodyStream() {
			next(ctx)
			return
		}
		var body heldBody
		if err == nil {
			err = b.read(ctx, &body)
		}
		if err != nil {
			b.free(&body)
			ctx.Request.SetBodyRaw(nil)
			s.ErrorHandler(ctx, err)
			ctx.SetConnectionClose() // the rest of the body is not read
			return
		}
		ctx.Request.SetBodyRaw(body.buf)
		next(ctx)
		ctx.Request.SetBodyRaw(nil) // the handler's borrow ends as it returns
		b.free(&body)
	}
}

// heldBody is a request body being read, or read, by the budget.
type heldBody struct {
	buf    []byte
	pooled *[]byte // the pool's buffer buf is, nil once it grew out of it
	held   int     // bytes claimed
}

// headerReceived sets how the body of the request whose head is h is read
// before the handler runs (fasthttp's HeaderReceived): one byte of it, so
// that the rest is read, and claimed, by the budget's handler; its first
// byte within the body timeout.
//
// A body whose Content-Length is over the limit, or over what is free, is
// refused from the head: none of it is read (its length is set to 0 for
// the server, the refusal kept for the handler), unless the request waits
// for 100 Continue (the ExpectHandler refuses it then).
func (b *bodyBudget) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if b.count.Load() > 0 {
		b.refusedHead(h) // left by the header's last request, whose handler never ran
	}
	n := h.ContentLength()
	if n == 0 || n == -2 {
		return fasthttp.RequestConfig{} // no body
	}
	if n > 0 && !b.mayContinue(h) {
		var err error
		if n > b.maxBody {
			err = fasthttp.ErrBodyTooLarge
		} else if !b.fits(n) {
			err = errBodiesInFlight
		}
		if err != nil {
			b.mu.Lock()
			b.refused[h] = err
			b.count.Add(1)
			b.mu.Unlock()
			h.SetContentLength(0)
			return fasthttp.RequestConfig{}
		}
	}
	c := fasthttp.RequestConfig{MaxRequestBodySize: 1}
	if t := b.timeout(h); t > 0 {
		c.ReadTimeout = t
		if b.srv.ReadTimeout > 0 {
			c.ReadTimeout = min(t, b.srv.ReadTimeout)
		}
	}
	return c
}

// mayContinue reports whether the request of h waits for 100 Continue
// before it sends its body (fasthttp's Request.MayContinue).
func (b *bodyBudget) mayContinue(h *fasthttp.RequestHeader) bool {
	return h.IsHTTP11() && bytes.EqualFold(h.Peek(fasthttp.HeaderExpect), []byte("100-continue"))
}

// refusedHead returns, and forgets, the refusal headerReceived made of
// the request of h; nil when it made none.
func (b *bodyBudget) refusedHead(h *fasthttp.RequestHeader) error {
	if b.count.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	err, ok := b.refused[h]
	if ok {
		delete(b.refused, h)
		b.count.Add(-1)
	}
	return err
}

// errBodiesInFlight is a body refused because the bodies held at once
// would be over the budget.
var errBodiesInFlight = errors.New("relay: the request bodies held at once are at the budget")

// bodyTimeoutError is a body of which no byte came for the body timeout.
type bodyTimeoutError struct{ limit time.Duration }

func (e *bodyTimeoutError) Error() string {
	return "no byte of the request body came for " + e.limit.String()
}

// read reads the body of ctx's request into body, claiming its buffer as
// it grows; free gives body back, whether or not read failed.
func (b *bodyBudget) read(ctx *fasthttp.RequestCtx, body *heldBody) error {
	h := &ctx.Request.Header
	n := h.ContentLength() // -1: chunked
	if n == 0 {
		return nil
	}
	if n > b.maxBody {
		return fasthttp.ErrBodyTooLarge
	}
	if n > 0 && !b.fits(n) {
		return errBodiesInFlight
	}
	want := b.maxBody + 1 // a chunked body: one byte over the limit tells it is over
	if n >= 0 {
		want = n
	}
	if !b.claim(min(want, firstBuf)) {
		return errBodiesInFlight
	}
	body.held = min(want, firstBuf)
	body.pooled = b.first()
	buf := *body.pooled

	timeout := b.timeout(h)
	var whole time.Time // the server's bound on the request, from its start
	if rt := b.srv.ReadTimeout; rt > 0 {
		whole = ctx.Time().Add(rt)
	}
	var set time.Time // when the read deadline was last moved
	sc, _ := ctx.Conn().(*socketConn)
	if sc != nil {
		defer func() { sc.bodyDeadline = time.Time{} }() // not set: the body is read
	}
	stream := ctx.RequestBodyStream()
	for {
		body.buf = buf
		if len(buf) == want {
			return nil // read whole: the stream is at its end
		}
		if len(buf) == cap(buf) {
			grow := min(cap(buf)+cap(buf)/2, want)
			if !b.claim(grow - body.held) {
				return errBodiesInFlight
			}
			body.held = grow
			nb := make([]byte, len(buf), grow)
			copy(nb, buf)
			if body.pooled != nil {
				b.bufs.Put(body.pooled)
				body.pooled = nil
			}
			buf = nb
		}
		if timeout > 0 {
			// Moved once an eighth of the limit passed, not on every read:
			// a stall is cut between 7/8 of the limit and the limit.
			if now := time.Now(); now.Sub(set) > timeout/8 {
				d := now.Add(timeout)
				if !whole.IsZero() && whole.Before(d) {
					d = whole
				}
				// The connection's own: the server sets its next deadline
				// itself before it reads again (ctx's would cost a call
				// more, to clear it after the handler). A socketConn sets
				// it only when a read goes to the socket.
				if sc != nil {
					sc.bodyDeadline = d
				} else if err := ctx.Conn().SetReadDeadline(d); err != nil {
					return err
				}
				set = now
			}
		}
		k, rerr := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		body.buf = buf
		if len(buf) > b.maxBody {
			return fasthttp.ErrBodyTooLarge
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil && isTimeout(rerr) && timeout > 0 && (whole.IsZero() || time.Now().Before(whole)):
			return &bodyTimeoutError{timeout}
		case rerr != nil:
			return rerr
		}
	}
}

// first returns an empty buffer of cap firstBuf for a body's first
// bytes, from the pool: a small body is read into one (and holds its
// length of the budget) without an allocation of its own.
func (b *bodyBudget) first() *[]byte {
	if p, ok := b.bufs.Get().(*[]byte); ok {
		*p = (*p)[:0]
		return p
	}
	buf := make([]byte, 0, firstBuf)
	return &buf
}

// free gives back what body claimed, and its buffer to the pool when it
// is the pool's.
func (b *bodyBudget) free(body *heldBody) {
	b.release(body.held)
	if body.pooled != nil {
		b.bufs.Put(body.pooled)
	}
	*body = heldBody{}
}

// fits reports whether n bytes are free now.
func (b *bodyBudget) fits(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held+n <= b.limit
}

// claim takes n bytes of the budget, and reports whether they were free.
func (b *bodyBudget) claim(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.limit {
		return false
	}
	b.held += n
	return true
}

// release gives back n bytes claimed.
func (b *bodyBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// inFlight returns the bytes claimed now.
func (b *bodyBudget) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// refusal returns the budget's 503 when err, the server's or the budget
// handler's failure to read the request of ctx, is the budget's refusal;
// nil otherwise. A refusal from the request's head that no handler
// answered (the server failed the request first) is forgotten.
func (b *bodyBudget) refusal(ctx *fasthttp.RequestCtx, err error) *Problem {
	if b == nil {
		return nil
	}
	b.refusedHead(&ctx.Request.Header)
	if errors.Is(err, errBodiesInFlight) {
		return b.problem()
	}
	return nil
}

// refusedBeforeContinue returns the budget's 503 for a request that waits
// for 100 Continue and whose Content-Length is over what is free now (the
// body is never read), nil otherwise.
func (b *bodyBudget) refusedBeforeContinue(ctx *fasthttp.RequestCtx) *Problem {
	if b == nil {
		return nil
	}
	if n := ctx.Request.Header.ContentLength(); n > 0 && n <= b.maxBody && !b.fits(n) {
		return b.problem()
	}
	return nil
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
