package relay

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// How a stream gets its goroutine once the request's handler returns, as
// Relay.ReuseGoroutines says: by default the hijacked connection's
// goroutine runs it to its end (as net/http's Hijacker); with
// ReuseGoroutines, the goroutine that serves the connection runs it
// (handOver, in place) and then the connection's next stream, and a silent
// stream parks.

// carry runs p, its writer made with wc; sc is ctx's connection when the
// relay's Listener made it.
func (r *Relay) carry(ctx *fasthttp.RequestCtx, sc *socketConn, p *relayedStream, wc writerConfig) {
	if !r.ReuseGoroutines || sc == nil || !p.handOver(ctx, sc, wc) {
		p.hijack(ctx, sc, wc)
	}
}

// nextStream serves conn's next requests with srv after a stream until
// one's response is a stream handed over in place (handOver), and returns
// it. ok=false when the connection ended first, or when streams are not
// handed over (ReuseGoroutines false, or conn not a socketConn): the
// server then serves conn to its end.
func (r *Relay) nextStream(conn net.Conn, srv *fasthttp.Server) (p *relayedStream, ok bool) {
	sc, _ := conn.(*socketConn)
	if !r.ReuseGoroutines || sc == nil {
		srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
		return nil, false
	}
	p, ok = sc.handover.Serve(conn, srv)
	if ok && sc.inPlace.Load() {
		p.inPlace(sc)
	}
	return p, ok
}

// inPlace readies a stream handed over in place once the server returned.
// The connection may serve another request only when the server's last
// read waited for a request's first byte: else a pipelined request it
// buffered would be lost.
func (p *relayedStream) inPlace(sc *socketConn) {
	sc.inPlace.Store(false)
	if !sc.idleRead {
		p.cw.closeAfter()
	}
	if sc.SetDeadline(time.Time{}) != nil {
		p.cw.srv = nil // closed at the stream's end
	}
}
