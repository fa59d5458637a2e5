package relay

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// A carrier gives a Relay's event streams their goroutines: it starts each
// stream once the handler that answered its request returns, and says
// whether a stream that waits for its producer may give its goroutine up.
// There are two, chosen by Relay.ReuseGoroutines: goroutinePerStream and
// reuseGoroutines.
type carrier interface {
	// carry runs st, the stream answering the request on ctx, from the
	// handler; sc is ctx's connection when the relay's Listener served it.
	carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse)
	// parks reports whether a stream that waits for its producer gives its
	// goroutine up (relayedStream.park), to be run on by a new one
	// (wake).
	parks() bool
	// next serves conn's next requests with srv once a stream on it ended
	// with the connection kept, and returns the stream this goroutine is
	// to run next, ok=false when none.
	next(conn net.Conn, srv *fasthttp.Server) (st streamResponse, ok bool)
}

// goroutinePerStream is the carrier without Relay.ReuseGoroutines: each stream is hijacked (hijack)
// and runs on a goroutine of its own to its end; the consumer's next
// request on a kept connection goes back to the server.
type goroutinePerStream struct{}

func (goroutinePerStream) carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse) {
	st.hijack(ctx, sc)
}

func (goroutinePerStream) parks() bool { return false }

func (goroutinePerStream) next(conn net.Conn, srv *fasthttp.Server) (streamResponse, bool) {
	srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
	return streamResponse{}, false
}

// reuseGoroutines is the carrier of Relay.ReuseGoroutines, which starts as
// few goroutines as it can: a kept connection's next stream is run by the
// goroutine that served its request (in place, see handOver), else by the
// hijack's; and a stream whose producer is silent for a second parks with
// the Relay's Poller (no Poller: it does not), run on by a new goroutine
// when bytes arrive.
type reuseGoroutines struct{}

func (reuseGoroutines) carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse) {
	if sc == nil || !st.handOver(ctx, sc) {
		st.hijack(ctx, sc)
	}
}

func (reuseGoroutines) parks() bool { return true }

func (reuseGoroutines) next(conn net.Conn, srv *fasthttp.Server) (streamResponse, bool) {
	return nextStream(conn, srv)
}

// carrier returns r's carrier.
func (r *Relay) carrier() carrier {
	if r.ReuseGoroutines {
		return reuseGoroutines{}
	}
	return goroutinePerStream{}
}

// A kept connection's runs are carried by one goroutine (wire.Handover):
// when a stream ends with the connection kept, the goroutine that ran it
// serves the consumer's next request itself (relayedStream.serve,
// nextStream), and when that
// request is answered with a stream, reuseGoroutines hands the stream over
// to it in place (handOver): no hijack, and no goroutine started for it.

// nextStream serves conn's next requests until one is answered with a
// stream handed over in place, and returns that stream; ok=false when the
// connection ended first, or its stream runs elsewhere, or conn is not a
// socketConn (its streams start goroutines of their own).
func nextStream(conn net.Conn, srv *fasthttp.Server) (st streamResponse, ok bool) {
	sc, _ := conn.(*socketConn)
	if sc == nil {
		srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
		return st, false
	}
	st, ok = sc.handover.Serve(conn, srv)
	if ok && sc.inPlace.Load() {
		st.inPlace(sc)
	}
	return st, ok
}

// inPlace readies a stream handed over in place (handOver) once the server
// returned: the connection is kept only when the server's next read was
// its wait for a request's first byte, so nothing it had buffered (a
// pipelined request) is lost, and the deadlines the server set are undone.
func (st *streamResponse) inPlace(sc *socketConn) {
	sc.inPlace.Store(false)
	if !sc.idleRead && st.w.srv != nil {
		st.w.srv, st.header = nil, withClose(st.header)
	}
	if sc.SetDeadline(time.Time{}) != nil {
		st.w.srv = nil // the stream ends with the connection closed
	}
}
