package relay

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// A kept connection's runs are carried by one goroutine (wire.Handover):
// when a stream ends with the connection kept, the goroutine that ran it
// serves the consumer's next request itself (nextStream), and when that
// request is answered with a stream, its handler hands the stream over to
// it in place (respond): no hijack, and no goroutine started for it.

// hijackedStream is what a stream needs to run (run).
type hijackedStream struct {
	r    *Relay
	w    *consumerWriter
	head []byte
	ub   *upstreamBody
	resp *fasthttp.Response
	rep  *RunReport
}

// serveConnection runs the stream, then, while it ends with the connection
// kept and the consumer's next request is answered with a stream, that
// one, on this goroutine.
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
	st, ok = sc.handover.Serve(conn, srv)
	if ok && sc.inPlace.Load() {
		st.inPlace(sc)
	}
	return st, ok
}

// inPlace readies a stream handed over in place (respond) once the server
// returned: the connection is kept only when the server's next read was
// its wait for a request's first byte, so nothing it had buffered (a
// pipelined request) is lost, and the deadlines the server set are undone.
func (st *hijackedStream) inPlace(sc *socketConn) {
	sc.inPlace.Store(false)
	if !sc.idleRead && st.w.srv != nil {
		st.w.srv, st.head = nil, withClose(st.head)
	}
	if sc.SetDeadline(time.Time{}) != nil {
		st.w.srv = nil // the stream ends with the connection closed
	}
}
