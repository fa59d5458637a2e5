package relay

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// A carrier gives a Relay's event streams their goroutines once the
// request's handler returns; Relay.ReuseGoroutines chooses one of two.
type carrier interface {
	// carry runs st; sc is ctx's connection when the relay's Listener made it.
	carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse)
	parks() bool // whether a stream may park (relayedStream.park)
	// next serves conn's next requests with srv after a stream, and returns
	// the stream this goroutine runs next, ok=false when none.
	next(conn net.Conn, srv *fasthttp.Server) (st streamResponse, ok bool)
}

// goroutinePerStream runs each stream on its hijacked connection's
// goroutine to its end.
type goroutinePerStream struct{}

func (goroutinePerStream) carry(ctx *fasthttp.RequestCtx, sc *socketConn, st streamResponse) {
	st.hijack(ctx, sc)
}

func (goroutinePerStream) parks() bool { return false }

func (goroutinePerStream) next(conn net.Conn, srv *fasthttp.Server) (streamResponse, bool) {
	srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
	return streamResponse{}, false
}

// reuseGoroutines runs a connection's next stream on the goroutine that
// served its request (handOver), and parks silent streams.
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

func (r *Relay) carrier() carrier {
	if r.ReuseGoroutines {
		return reuseGoroutines{}
	}
	return goroutinePerStream{}
}

// nextStream serves conn's next requests until one's response is a stream
// handed over in place (handOver), and returns it. ok=false when the
// connection ended first, or conn is not a socketConn.
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

// inPlace readies a stream handed over in place once the server returned.
// The connection may serve another request only when the server's last
// read waited for a request's first byte: else a pipelined request it
// buffered would be lost.
func (st *streamResponse) inPlace(sc *socketConn) {
	sc.inPlace.Store(false)
	if !sc.idleRead && st.w.srv != nil {
		st.w.srv, st.header = nil, withClose(st.header)
	}
	if sc.SetDeadline(time.Time{}) != nil {
		st.w.srv = nil // closed at the stream's end
	}
}
