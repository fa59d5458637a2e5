package wire

import (
	"net"
	"sync/atomic"
)

// ConnServer serves a connection's requests until the connection ends or
// a request's handler takes it over (fasthttp.Server's ServeConn).
type ConnServer interface {
	ServeConn(c net.Conn) error
}

// Handover carries a persistent connection's streams on one goroutine. When a
// stream ends and the connection stays open, the goroutine that ran it serves
// the peer's next requests itself (Serve), and when one of them is
// served with a stream of type S, the request's handler (or the
// goroutine the server starts for a taken-over connection) hands the
// stream over to it (Give) instead of running it: the serving goroutine,
// whose stack has grown down the request's path once, runs it once the
// server returns.
//
// Every step runs on the serving goroutine but Give, made by the request's
// handler on it (the channel holds one stream: the Give does not wait), or
// by the goroutine the server starts when it takes the connection over. A server
// that cannot take it over closes the connection before ServeConn returns
// (Close): so once a request's handler has taken its stream (Take), a
// stream comes unless the connection is closed.
//
// A Handover belongs to one connection, and is used in place.
type Handover[S any] struct {
	serving   bool        // a goroutine serves the connection in Serve
	handsOver bool        // the request being served hands its stream over
	closed    atomic.Bool // Close was called
	handoff   chan S      // made at the first hand-over
}

// Serve serves conn's next requests with srv on this goroutine until srv
// returns, and returns the stream a request handed over (Take, Give);
// ok=false when srv returned without one: the connection ended, or a
// request's stream runs elsewhere.
func (h *Handover[S]) Serve(conn net.Conn, srv ConnServer) (s S, ok bool) {
	h.serving = true
	srv.ServeConn(conn) //nolint:errcheck // the server logs and closes what it cannot serve
	handsOver := h.handsOver
	h.serving, h.handsOver = false, false
	if !handsOver {
		return s, false
	}
	select {
	case s = <-h.handoff:
		return s, true
	default:
	}
	if h.closed.Load() {
		return s, false // the server closed the connection instead of taking it over
	}
	return <-h.handoff, true
}

// Take reports whether the stream responding to the request being served goes
// to the goroutine serving it (Serve), to be given with Give; false when
// no goroutine serves the connection in Serve, and the stream runs
// elsewhere. Called by the request's handler, on the serving goroutine.
func (h *Handover[S]) Take() bool {
	if !h.serving {
		return false
	}
	h.handsOver = true
	if h.handoff == nil {
		h.handoff = make(chan S, 1)
	}
	return true
}

// Give hands s to the goroutine serving the connection, after Take
// returned true; from the goroutine the server started for the connection.
func (h *Handover[S]) Give(s S) { h.handoff <- s }

// Close records that the connection was closed: Serve waits for no stream
// after that. The connection's Close calls it.
func (h *Handover[S]) Close() { h.closed.Store(true) }
