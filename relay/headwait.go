package relay

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// interruptNow is a deadline long past: it wakes a blocked read or write.
var interruptNow = time.Unix(1, 0)

// headerWait cancels a request to the producer whose consumer hangs up before
// the producer's response has a header: the agent may think for minutes
// (--first-byte-timeout) before it answers, and the connection it holds
// meanwhile counts against --upstream-max-conns. The consumer's connection
// is watched for the hangup from the moment the request is forwarded
// (Relay.do); the relay's transport (streamTransport) attaches the
// producer's connection once it has one and detaches it once the header is
// read, after which the stream's own watch (upstreamBody.cancel) takes over.
//
// A hangup interrupts the producer's connection (deadlines in the past):
// the write of the request or the read of the header fails, and the
// transport closes the connection instead of pooling it. Deadlines the
// transport sets are set under mu, so that none undoes the interruption.
type headerWait struct {
	mu   sync.Mutex
	conn net.Conn // the producer's connection while its header is awaited
	gone bool     // the consumer hung up
	done bool     // the wait is over (the header arrived or the request failed)
	// onHangup is hangup as a func, made once with the headerWait.
	onHangup func()
}

// headerWaitFor returns a headerWait for a request that conn carries: a
// consumer's socketConn keeps one for its requests, which come one after
// another, so that a run makes neither it nor its hangup func; any other
// connection gets a new one.
func headerWaitFor(conn net.Conn) *headerWait {
	sc, ok := conn.(*socketConn)
	if !ok {
		return newHeaderWait()
	}
	if sc.headerWait == nil {
		sc.headerWait = newHeaderWait()
		return sc.headerWait
	}
	h := sc.headerWait
	h.mu.Lock()
	h.conn, h.gone, h.done = nil, false, false
	h.mu.Unlock()
	return h
}

func newHeaderWait() *headerWait {
	h := &headerWait{}
	h.onHangup = h.hangup
	return h
}

// headerWaitKey is the request's user value under which the transport finds
// its headerWait.
type headerWaitKey struct{}

// errHeadWaitGone is the transport's error for a request whose consumer hung
// up before the producer's header arrived.
var errHeadWaitGone = errors.New("the consumer went away before the producer answered")

func headerWaitOf(req *fasthttp.Request) *headerWait {
	hw, _ := req.UserValue(headerWaitKey{}).(*headerWait)
	return hw
}

// hangup is the consumer's hangup: the watcher calls it.
func (h *headerWait) hangup() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.gone = true
	if h.conn != nil {
		h.conn.SetDeadline(interruptNow) //nolint:errcheck // a closed connection fails the wait anyway
	}
}

// attach notes the producer's connection, whose deadlines the hangup
// interrupts (the connection under any wrapper with state of its own);
// errHeadWaitGone when the consumer is gone already.
func (h *headerWait) attach(conn net.Conn) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return errHeadWaitGone
	}
	h.conn = conn
	return nil
}

// setDeadline calls set (the transport's deadline on the connection) unless
// the consumer is gone: then errHeadWaitGone.
func (h *headerWait) setDeadline(set func(time.Time) error, t time.Time) error {
	if h == nil {
		return set(t)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return errHeadWaitGone
	}
	return set(t)
}

// detach ends the wait: the header was read, or the request failed. It
// reports whether the consumer hung up before.
func (h *headerWait) detach() (gone bool) {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn, h.done = nil, true
	return h.gone
}

// do sends req to the producer and waits for the header of its response,
// cancelling both when the consumer hangs up meanwhile (see headerWait); gone
// reports that it did. Without a watcher for the consumer's connection
// (no Poller, not Linux, a connection with no descriptor) or with a Doer other than
// NewClient's, the wait goes on until the header or the first-byte timeout.
func (r *Relay) do(ctx *fasthttp.RequestCtx, req *fasthttp.Request, resp *fasthttp.Response) (gone bool, err error) {
	conn := ctx.Conn()
	hw := headerWaitFor(conn)
	token, watched := watchHangup(r.poller(), conn, hw.onHangup)
	if watched {
		req.SetUserValue(headerWaitKey{}, hw)
	}
	err = r.client.Do(req, resp)
	gone = hw.detach()
	if watched {
		unwatchHangup(r.poller(), conn, token)
	}
	return gone, err
}
