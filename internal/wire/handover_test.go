package wire

import (
	"net"
	"testing"
)

// serverFunc is a ConnServer made of a function.
type serverFunc func(net.Conn) error

func (f serverFunc) ServeConn(c net.Conn) error { return f(c) }

// A stream handed over by a request's handler reaches the goroutine
// serving the connection, whether it is given before ServeConn returns or
// after.
func TestHandoverServeReturnsTheStreamGiven(t *testing.T) {
	var h Handover[int]
	s, ok := h.Serve(nil, serverFunc(func(net.Conn) error {
		if !h.Take() {
			t.Error("the serving goroutine did not take the stream")
		}
		go h.Give(7) // the server's goroutine for the taken-over connection
		return nil
	}))
	if !ok || s != 7 {
		t.Fatalf("Serve returned %d, %v; want 7, true", s, ok)
	}
}

// Without a hand-over Serve returns none; a server that closed the
// connection instead of taking it over makes Serve return none too, not
// wait; outside Serve no stream is taken.
func TestHandoverServeWithoutAStream(t *testing.T) {
	var h Handover[int]
	if h.Take() {
		t.Fatal("a stream was taken with no goroutine serving the connection")
	}
	if _, ok := h.Serve(nil, serverFunc(func(net.Conn) error { return nil })); ok {
		t.Fatal("Serve returned a stream no request handed over")
	}
	if _, ok := h.Serve(nil, serverFunc(func(net.Conn) error {
		h.Take()
		h.Close() // the server could not take the connection over
		return nil
	})); ok {
		t.Fatal("Serve returned a stream from a closed connection")
	}
	// The next Serve on a Handover starts afresh.
	if _, ok := h.Serve(nil, serverFunc(func(net.Conn) error { return nil })); ok {
		t.Fatal("a later Serve returned a stream")
	}
}
