//go:build linux

package relay

import (
	"io"
	"net"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/internal/wire"
)

// The Poller cancels the stream of a consumer that hangs up, and a watch
// that has ended cancels nothing.
func TestHangupWatcherCancels(t *testing.T) {
	pl := wirePoller(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := func() (server, client net.Conn) {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err = ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return server, client
	}
	gone := &fakeBody{}
	s1, c1 := open()
	u1 := newUpstreamBody(gone)
	tok, ok := watchUpstream(pl, s1, u1)
	if !ok {
		t.Fatal("the connection could not be watched")
	}
	stay := &fakeBody{}
	s2, c2 := open()
	u2 := newUpstreamBody(stay)
	tok2, _ := watchUpstream(pl, s2, u2)
	c2.Write([]byte("pipelined bytes wake nothing")) //nolint:errcheck
	unwatchHangup(pl, s2, tok2)
	c1.Close()
	c2.Close()
	awaitHangup(t, u1)
	unwatchHangup(pl, s1, tok)
	s1.Close()
	s2.Close()
	if u2.why() != nil {
		t.Errorf("an unwatched stream was cancelled: %v", u2.why())
	}
}

// awaitHangup waits until the watcher has cancelled u for its consumer's
// hangup, failing the test after liveness.
func awaitHangup(t *testing.T, u *upstreamBody) {
	t.Helper()
	testkit.WaitFor(t, "the hangup noticed", func() bool { return u.why() == errConsumerGone })
}

// watchUpstream watches conn's hangup as a stream does: cancelling u.
func watchUpstream(pl *wire.Poller, conn net.Conn, u *upstreamBody) (int32, bool) {
	return watchHangup(pl, conn, func() { u.cancel(errConsumerGone) })
}

// registered reports whether pl still holds token's registration, unfired
// (leaving it the action of a persistent connection between runs).
func registered(pl *wire.Poller, token int32) bool { return pl.Rewatch(token, betweenRuns) }

type fakeBody struct{}

func (*fakeBody) Read([]byte) (int, error)   { return 0, io.EOF }
func (*fakeBody) Close() error               { return nil }
func (*fakeBody) CloseWithError(error) error { return nil }

// A consumer's connection served by the relay's Listener stays registered
// with the watcher across the runs on it: each run swaps in its own cancel
// (the same registration, no system call), a hangup between runs cancels
// the next run at once, and closing the connection ends the registration.
func TestHangupWatchKeptAcrossRuns(t *testing.T) {
	pl := wirePoller(t)
	x, y := testkit.TCPPair(t)
	sc, ok := newSocketConn(x).(*socketConn)
	if !ok {
		t.Fatal("not a socketConn")
	}
	first := newUpstreamBody(&fakeBody{})
	tok, ok := watchUpstream(pl, sc, first)
	if !ok {
		t.Fatal("the connection could not be watched")
	}
	unwatchHangup(pl, sc, tok) // the first run ends; the connection stays open
	second := newUpstreamBody(&fakeBody{})
	tok2, _ := watchUpstream(pl, sc, second)
	if tok2 != tok {
		t.Fatalf("the second run registered anew (%d, was %d)", tok2, tok)
	}
	y.Close()
	awaitHangup(t, second)
	if first.why() != nil {
		t.Errorf("the ended run was cancelled: %v", first.why())
	}
	unwatchHangup(pl, sc, tok2)
	third := newUpstreamBody(&fakeBody{})
	watchUpstream(pl, sc, third)
	if third.why() != errConsumerGone {
		t.Errorf("a run after the hangup was not cancelled: %v", third.why())
	}
	sc.Close()
	if registered(pl, tok) || sc.hangup.Load() != 0 {
		t.Error("the closed connection's registration is left")
	}
}

// A persistent connection closed between runs, without a hangup, leaves no
// registration behind either.
func TestHangupWatchEndsWithTheConnection(t *testing.T) {
	pl := wirePoller(t)
	x, _ := testkit.TCPPair(t)
	sc := newSocketConn(x).(*socketConn)
	tok, ok := watchUpstream(pl, sc, newUpstreamBody(&fakeBody{}))
	if !ok {
		t.Fatal("the connection could not be watched")
	}
	unwatchHangup(pl, sc, tok)
	if !registered(pl, tok) {
		t.Fatal("the persistent connection's registration ended with its run")
	}
	sc.Close()
	if registered(pl, tok) {
		t.Error("the closed connection's registration is left")
	}
}
