package relay

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// A carrier gives a Relay's event streams their goroutines, once the
// request's handler returns, and says whether a stream may park. There are
// two, chosen by Relay.ReuseGoroutines.
type carrier interface {
	// carry runs st, the response to ctx's request; sc is ctx's connection
	// when the relay's Listener served it.
	carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse)
	// parks reports whether a stream may park (relayedStream.park).
	parks() bool
	// next serves conn's next requests with srv after a stream ended with
	// conn reusable, and returns the stream this goroutine runs next,
	// ok=false when none.
	next(conn net.Conn, srv *fasthttp.Server) (st streamResponse, ok bool)
}

// goroutinePerStream hijacks each stream's connection and runs the stream
// on a goroutine of its own to its end; the connection's next request goes
// back to the server.
type goroutinePerStream struct{}

func (goroutinePerStream) carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse) {
	st.hijack(ctx, sc)
}

func (goroutinePerStream) parks() bool { return false }

func (goroutinePerStream) next(conn net.Conn, srv *fasthttp.Server) (streamResponse, bool) {
	srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
	return streamResponse{}, false
}

// reuseGoroutines starts as few goroutines as it can: a connection's next
// stream runs on the goroutine that served its request (handOver), and a
// stream whose producer is silent parks with the Relay's Poller.
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

// nextStream serves conn's next requests (wire.Handover) until the
// response to one is a stream handed over in place (handOver), and returns
// it: the goroutine that ran the last stream runs it, with no hijack and no
// goroutine started. ok=false when the connection ended first, or conn is
// not a socketConn (its streams get goroutines of their own).
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

// inPlace readies a stream handed over in place once the server returned:
// the connection may serve another request only when the server's last
// read waited for a request's first byte, so that no pipelined request it
// buffered is lost; the server's deadlines are undone.
func (st *streamResponse) inPlace(sc *socketConn) {
	sc.inPlace.Store(false)
	if !sc.idleRead && st.w.srv != nil {
		st.w.srv, st.header = nil, withClose(st.header)
	}
	if sc.SetDeadline(time.Time{}) != nil {
		st.w.srv = nil // closed at the stream's end
	}
}
