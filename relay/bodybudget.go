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

// bodyBudget bounds the bytes of request bodies a server buffers at once,
// all connections together (issue #31: eight 60 MB bodies, 739 MiB), and
// reads them for the relay's handler (readBody) before it serves them.
//
// It counts the bytes received, not those a header announces (issue #39:
// four chunked or 64 MiB Content-Length headers held the whole budget),
// claiming each growth of a body's buffer before it is made. A claim over
// the budget, or a Content-Length over what is free, is refused with 503
// and Retry-After. A body that sends no byte for BodyTimeout is refused
// with 408, as nginx's client_body_timeout (between two reads).
type bodyBudget struct {
	limit   int // bytes of bodies buffered at once
	maxBody int
	srv     *fasthttp.Server
	// timeout is the body timeout of a request by its header (its route's),
	// for the body's first read (headerReceived); at most zero: none.
	timeout func(*fasthttp.RequestHeader) time.Duration

	bufs sync.Pool // *[]byte of cap firstBuf

	mu   sync.Mutex
	held int
	// refused maps the requests refused by header (headerReceived) until
	// their handler responds; count is len(refused), read without mu where
	// the request's own entry was made on this goroutine. An entry whose
	// handler never ran goes when its header serves the next request.
	refused map[*fasthttp.RequestHeader]error
	count   atomic.Int32
}

// firstBuf is a body's first buffer; it grows by half from there, so a
// body takes at most half again what came (a doubling would leave 100
// uploads of just over 1 MiB 200 MiB of the default 256 MiB budget).
const firstBuf = 16 << 10

// newBodyBudget returns srv's budget of limit bytes (zero: four times
// maxBody); nil timeout means DefaultBodyTimeout.
func newBodyBudget(limit, maxBody int, srv *fasthttp.Server, timeout func(*fasthttp.RequestHeader) time.Duration) *bodyBudget {
	if limit <= 0 {
		limit = 4 * maxBody
	}
	if timeout == nil {
		timeout = func(*fasthttp.RequestHeader) time.Duration { return DefaultBodyTimeout }
	}
	return &bodyBudget{limit: max(limit, maxBody), maxBody: maxBody, srv: srv, timeout: timeout, refused: map[*fasthttp.RequestHeader]error{}}
}

// install has srv stream request bodies, each counted against the budget
// from its header on (headerReceived); srv's Handler reads them
// (readBody).
func (b *bodyBudget) install(s *fasthttp.Server) {
	s.StreamRequestBody = true
	s.HeaderReceived = b.headerReceived
}

type heldBody struct {
	buf    []byte
	pooled *[]byte // buf's pooled buffer, nil once it grew out of it
	held   int     // bytes claimed
	set    bool    // buf is the request's body, until done
}

// readBody reads ctx's streamed request body whole into body, with
// timeout between two reads, and sets it as the request's body until done;
// the caller passes the timeout of the route it has already matched. It
// reports false when the body was refused or could not be read: the
// server's ErrorHandler (which must ask refusal first) has then responded,
// and the connection closes. A nil budget, or a body not streamed, reads
// nothing.
func (b *bodyBudget) readBody(ctx *fasthttp.RequestCtx, timeout time.Duration, body *heldBody) bool {
	if b == nil {
		return true
	}
	err := b.refusedByHeader(&ctx.Request.Header)
	if err == nil && !ctx.Request.IsBodyStream() {
		return true
	}
	if err == nil {
		err = b.read(ctx, timeout, body)
	}
	if err != nil {
		b.free(body)
		ctx.Request.SetBodyRaw(nil)
		b.srv.ErrorHandler(ctx, err)
		ctx.SetConnectionClose() // the rest of the body is not read
		return false
	}
	ctx.Request.SetBodyRaw(body.buf)
	body.set = true
	return true
}

// done ends the handler's borrow of the body readBody set, as the handler
// returns, and gives the body's buffer back.
func (b *bodyBudget) done(ctx *fasthttp.RequestCtx, body *heldBody) {
	if !body.set {
		return
	}
	ctx.Request.SetBodyRaw(nil)
	b.free(body)
}

// headerReceived has the server read one byte of the body, so that the
// budget's handler reads and claims the rest. A Content-Length over the
// limit or what is free is refused here, none of it read, unless the
// request waits for 100 Continue (the ExpectHandler refuses it then).
func (b *bodyBudget) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if b.count.Load() > 0 {
		b.refusedByHeader(h) // left by the header's last request, whose handler never ran
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

// mayContinue is fasthttp's Request.MayContinue.
func (b *bodyBudget) mayContinue(h *fasthttp.RequestHeader) bool {
	return h.IsHTTP11() && bytes.EqualFold(h.Peek(fasthttp.HeaderExpect), []byte("100-continue"))
}

// refusedByHeader returns and forgets headerReceived's refusal of h, or nil.
func (b *bodyBudget) refusedByHeader(h *fasthttp.RequestHeader) error {
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

var errBodiesInFlight = errors.New("relay: the request bodies held at once are at the budget")

type bodyTimeoutError struct{ limit time.Duration }

func (e *bodyTimeoutError) Error() string {
	return "no byte of the request body came for " + e.limit.String()
}

// read reads ctx's request body into body, claiming its buffer as it
// grows; free gives body back, whether or not read failed.
func (b *bodyBudget) read(ctx *fasthttp.RequestCtx, timeout time.Duration, body *heldBody) error {
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

	var whole time.Time // the server's ReadTimeout, from the request's start
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
			// Moved once an eighth of the limit passed, not on every read.
			if now := time.Now(); now.Sub(set) > timeout/8 {
				d := now.Add(timeout)
				if !whole.IsZero() && whole.Before(d) {
					d = whole
				}
				// The connection's, not ctx's, which would cost a call more
				// to clear: the server sets its next deadline itself.
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

// first returns an empty pooled buffer of cap firstBuf: a small body needs
// no allocation of its own.
func (b *bodyBudget) first() *[]byte {
	if p, ok := b.bufs.Get().(*[]byte); ok {
		*p = (*p)[:0]
		return p
	}
	buf := make([]byte, 0, firstBuf)
	return &buf
}

func (b *bodyBudget) free(body *heldBody) {
	b.release(body.held)
	if body.pooled != nil {
		b.bufs.Put(body.pooled)
	}
	*body = heldBody{}
}

func (b *bodyBudget) fits(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held+n <= b.limit
}

func (b *bodyBudget) claim(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.limit {
		return false
	}
	b.held += n
	return true
}

func (b *bodyBudget) release(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

func (b *bodyBudget) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// refusal returns the budget's 503 when err is the budget's refusal, nil
// otherwise; a refusal by header that no handler responded to is
// forgotten.
func (b *bodyBudget) refusal(ctx *fasthttp.RequestCtx, err error) *Problem {
	if b == nil {
		return nil
	}
	b.refusedByHeader(&ctx.Request.Header)
	if errors.Is(err, errBodiesInFlight) {
		return b.problem()
	}
	return nil
}

// refusedBeforeContinue returns the budget's 503 for an Expect:
// 100-continue request whose Content-Length is over what is free, or nil.
func (b *bodyBudget) refusedBeforeContinue(ctx *fasthttp.RequestCtx) *Problem {
	if b == nil {
		return nil
	}
	if n := ctx.Request.Header.ContentLength(); n > 0 && n <= b.maxBody && !b.fits(n) {
		return b.problem()
	}
	return nil
}

// retryAfter is the budget's 503's Retry-After, in seconds: bodies are
// mostly read and forwarded within one.
const retryAfter = 1

func (b *bodyBudget) problem() *Problem {
	return &Problem{Type: ProblemBodiesInFlight, Title: "Too many request bodies in flight", Status: fasthttp.StatusServiceUnavailable,
		Detail:     "the relay holds at most " + strconv.Itoa(b.limit) + " bytes of request bodies at once (--max-bodies-in-flight); retry shortly",
		retryAfter: retryAfter}
}

// ProblemBodiesInFlight is the problem type of a request refused by
// Relay.MaxBodiesInFlight.
const ProblemBodiesInFlight = "urn:agui-relay:bodies-in-flight"
