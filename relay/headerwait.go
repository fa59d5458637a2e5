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
// the response header: the agent may think for minutes (--first-byte-timeout)
// while its connection counts against --upstream-max-conns. streamTransport
// attaches the producer's connection and detaches it once the header is
// read; the stream's own watch takes over then.
//
// A hangup sets the producer's connection's deadlines in the past, so the
// transport closes it instead of pooling it. The transport's deadlines are
// set under mu, so that none undoes the interruption.
type headerWait struct {
	mu       sync.Mutex
	conn     net.Conn // the producer's, while its header is awaited
	gone     bool     // the consumer hung up
	done     bool
	onHangup func() // hangup, made once
}

// headerWaitFor returns a headerWait for a request on conn: a socketConn
// reuses one for its requests, which come one after another, so that a run
// allocates neither it nor its hangup func.
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

type headerWaitKey struct{} // the request's user value

var errHeaderWaitGone = errors.New("the consumer went away before the producer responded")

func headerWaitOf(req *fasthttp.Request) *headerWait {
	hw, _ := req.UserValue(headerWaitKey{}).(*headerWait)
	return hw
}

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

// attach notes the producer's connection (under any wrapper with deadline
// state of its own); errHeaderWaitGone when the consumer is gone already.
func (h *headerWait) attach(conn net.Conn) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return errHeaderWaitGone
	}
	h.conn = conn
	return nil
}

func (h *headerWait) setDeadline(set func(time.Time) error, t time.Time) error {
	if h == nil {
		return set(t)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return errHeaderWaitGone
	}
	return set(t)
}

// detach ends the wait and reports whether the consumer hung up before.
func (h *headerWait) detach() (gone bool) {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn, h.done = nil, true
	return h.gone
}

// do sends req to the producer and waits for the response header,
// cancelling both when the consumer hangs up meanwhile; gone reports that it
// did. Without a Poller that watches the connection, or with a Doer other
// than NewClient's, the wait goes on until the header or its timeout.
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
