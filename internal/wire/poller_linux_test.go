package wire

import (
	"fmt"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// fired returns an action and the channel it closes when it runs.
func fired() (func(), <-chan struct{}) {
	ch := make(chan struct{})
	return func() { close(ch) }, ch
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	testkit.Await(t, ch, fmt.Sprintf("never: %s", what))
}

// A hangup watch fires on the peer's close, not on its bytes; a read
// registration fires on input; a rewatched registration runs its new
// action.
func TestPollerFiresOnHangupAndInput(t *testing.T) {
	p := NewPoller()
	defer p.Close()
	a, b := connPair(t)
	c, d := connPair(t)

	first, firstRan := fired()
	hangup, hungUp := fired()
	tok, ok := p.WatchHangup(a.RawConn(), first)
	if !ok {
		t.Fatal("the connection could not be watched")
	}
	if !p.Rewatch(tok, hangup) {
		t.Fatal("an unfired registration could not be rewatched")
	}
	b.Write([]byte("bytes wake nothing")) //nolint:errcheck

	input, gotInput := fired()
	rtok := p.Reserve(input)
	if !p.ArmRead(c.RawConn(), rtok, time.Time{}) {
		t.Fatal("the connection could not be armed for input")
	}
	d.Write([]byte("x")) //nolint:errcheck
	await(t, gotInput, "the input's event")
	p.Remove(c.RawConn(), rtok)

	b.Close()
	await(t, hungUp, "the hangup's event")
	select {
	case <-firstRan:
		t.Fatal("the replaced action ran")
	default:
	}
	if p.Rewatch(tok, func() {}) {
		t.Fatal("a fired registration could still be rewatched")
	}
}

// A removed or forgotten registration's action never runs.
func TestPollerRemoveAndForget(t *testing.T) {
	p := NewPoller()
	defer p.Close()
	a, b := connPair(t)
	c, d := connPair(t)
	tok, _ := p.WatchHangup(a.RawConn(), func() { t.Error("a removed registration fired") })
	p.Remove(a.RawConn(), tok)
	tok2, _ := p.WatchHangup(c.RawConn(), func() { t.Error("a forgotten registration fired") })
	p.Forget(tok2)
	// A third registration, on the same goroutine, fires after the two
	// would have: the poller's goroutine handles events in order.
	e, f := connPair(t)
	last, lastRan := fired()
	if _, ok := p.WatchHangup(e.RawConn(), last); !ok {
		t.Fatal("the connection could not be watched")
	}
	b.Close()
	d.Close()
	f.Close()
	await(t, lastRan, "the last hangup's event")
}

// Close ends the poller's goroutine before it returns; what is asked of
// the poller afterwards fails, and a second Close does nothing.
func TestPollerCloseLeavesNoGoroutine(t *testing.T) {
	p := NewPoller()
	a, b := connPair(t)
	hangup, hungUp := fired()
	if _, ok := p.WatchHangup(a.RawConn(), hangup); !ok {
		t.Fatal("the connection could not be watched")
	}
	b.Close()
	await(t, hungUp, "the hangup's event") // the goroutine runs
	if !pollerRunning() {
		t.Fatal("the poller's goroutine is not found running")
	}
	c, _ := connPair(t)
	tok, ok := p.WatchHangup(c.RawConn(), func() { t.Error("a registration fired after Close") })
	if !ok {
		t.Fatal("the connection could not be watched")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returns once the goroutine closed done, in its last defer.
	testkit.WaitFor(t, "the poller's goroutine is left after Close", func() bool { return !pollerRunning() })
	if _, ok := p.WatchHangup(c.RawConn(), func() {}); ok {
		t.Fatal("a closed poller watched a connection")
	}
	if p.ArmRead(c.RawConn(), p.Reserve(func() {}), time.Time{}) {
		t.Fatal("a closed poller armed a read")
	}
	p.Remove(c.RawConn(), tok)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// pollerRunning reports whether a Poller's goroutine is running.
func pollerRunning() bool {
	return testkit.GoroutinesIn("wire.(*Poller).loop") > 0
}

// A read registration with a deadline fires at it when no input comes, as
// a read deadline ends a wait in Go's poller; one removed before its
// deadline, or fired by input first, leaves no timer to fire it again.
func TestPollerFiresAtTheDeadline(t *testing.T) {
	p := NewPoller()
	defer p.Close()
	a, _ := connPair(t)
	expired, hasExpired := fired()
	start := time.Now()
	deadline := start.Add(20 * time.Millisecond)
	if !p.ArmRead(a.RawConn(), p.Reserve(expired), deadline) {
		t.Fatal("the connection could not be armed")
	}
	await(t, hasExpired, "the deadline's event")
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("fired %v before its deadline", deadline.Sub(now))
	}

	c, d := connPair(t)
	input, gotInput := fired()
	tok := p.Reserve(input)
	if !p.ArmRead(c.RawConn(), tok, time.Now().Add(time.Hour)) {
		t.Fatal("the connection could not be armed")
	}
	d.Write([]byte("x")) //nolint:errcheck
	await(t, gotInput, "the input's event")
	p.Remove(c.RawConn(), tok)

	e, _ := connPair(t)
	tok = p.Reserve(func() { t.Error("a removed registration fired at its deadline") })
	if !p.ArmRead(e.RawConn(), tok, time.Now().Add(time.Hour)) {
		t.Fatal("the connection could not be armed")
	}
	p.Remove(e.RawConn(), tok)

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.subs) != 0 {
		t.Errorf("registrations left: %v", p.subs)
	}
}

// Close stops the timers of the registrations left: their actions never
// run.
func TestPollerCloseStopsDeadlines(t *testing.T) {
	p := NewPoller()
	a, _ := connPair(t)
	tok := p.Reserve(func() { t.Error("a registration fired after Close") })
	if !p.ArmRead(a.RawConn(), tok, time.Now().Add(time.Hour)) {
		t.Fatal("the connection could not be armed")
	}
	p.mu.Lock()
	timer := p.subs[tok].timer
	p.mu.Unlock()
	if timer == nil {
		t.Fatal("no timer for the deadline")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if timer.Stop() {
		t.Error("the deadline's timer was still armed after Close")
	}
	if p.ArmRead(a.RawConn(), p.Reserve(func() {}), time.Now()) {
		t.Error("a closed poller armed a read")
	}
}
