package relay

import (
	"net"

	"github.com/valyala/fasthttp"
)

// A kept connection's runs are carried by one goroutine. When a stream
// ends with the connection kept, the goroutine that ran it serves the
// consumer's next request itself (nextStream), and when that request is
// answered with a stream, the server's hijack goroutine hands the stream
// back to it (respond) instead of starting one. A new goroutine would
// start with a small stack and grow it, copy by copy, down the run's
// deepest path (the next request's judging, under the server's frames);
// the serving goroutine has grown its stack once.
//
// The handover works on a socketConn, whose fields carry it; every
// step of it runs on the serving goroutine but the send on handoff, made by
// the hijack goroutine. The server starts that goroutine, which always
// calls respond's handler, when it hijacks the connection; when it cannot
// (a deadline it could not set), ServeConn closes the connection before it
// returns. So once respond has handed over, a stream comes unless the
// connection is closed.

// hijackedStream is what a stream needs to run (run).
type hijackedStream struct {
	r    *Relay
	w    *consumerWriter
	head []byte
	ub   *upstreamBody
	resp *fasthttp.Response
	rep  *RunReport
}

// carry runs the stream, then, while it ends with the connection kept and
// the consumer's next request is answered with a stream, that one, on this
// goroutine.
func (st hijackedStream) serveConnection() {
	for st.run() {
		var ok bool
		if st, ok = nextStream(st.w.conn, st.w.srv); !ok {
			return
		}
	}
}

// nextStream serves conn's next requests until one is answered with a
// stream, and returns that stream; ok=false when the connection ended
// first, or is not a socketConn (its streams start goroutines of their
// own).
func nextStream(conn net.Conn, srv *fasthttp.Server) (st hijackedStream, ok bool) {
	sc, _ := conn.(*socketConn)
	if sc == nil {
		srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
		return st, false
	}
	sc.serving = true
	srv.ServeConn(conn) //nolint:errcheck // as above
	handsOver := sc.handsOver
	sc.serving, sc.handsOver = false, false
	if !handsOver {
		return st, false
	}
	select {
	case st = <-sc.handoff:
		return st, true
	default:
	}
	if sc.closed.Load() {
		return st, false // the server closed the connection instead of hijacking it
	}
	return <-sc.handoff, true
}

// handoverConn returns sc, the connection of a request (nil when not a
// socketConn), when its stream answer goes to the goroutine serving it
// (nextStream), nil when the answer starts a goroutine of its own. Called
// from the handler, on that goroutine.
func handoverConn(sc *socketConn) *socketConn {
	if sc == nil || !sc.serving {
		return nil
	}
	sc.handsOver = true
	if sc.handoff == nil {
		sc.handoff = make(chan hijackedStream, 1)
	}
	return sc
}
