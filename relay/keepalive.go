package relay

import (
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// Keep-alives (Relay.KeepAlive) have one mechanism: a read deadline on the
// producer's connection, whose expiry means "write a keep-alive if one is
// due, and read on" (keepAliveDeadline, on every path). Each goes out on
// the stream's own goroutine between whole, flushed frames (Stream.Pump
// flushes before each read), so one never splits an event.
//   - polled: the deadline is the nearer of parking and the next
//     keep-alive (armKeepAlive); Poll returns at it (sendKeepAlive);
//   - parked: the deadline is the Poller registration's (ArmRead); the
//     stream it wakes finds nothing to read (stepAfterDeadline) and its
//     deadline passed, so its Poll returns at once onto the same path;
//   - read blocking (TLS, gzip): the deadline is on the connection beneath
//     the decoders, and wire.Body calls keepAliveDeadline (OnReadDeadline)
//     and reads on: neither crypto/tls nor compress/flate sees a timeout.
// A body not read off a connection of the relay's (an embedder's Doer) has
// no deadline to set, and so no keep-alives (warnNoKeepAlive).

// keepAlive is a stream's keep-alive state; what only a polled stream that
// waited needs is made then (waited), to keep the stream small.
type keepAlive struct {
	every time.Duration // 0: no keep-alives

	// The consumer's silence began at clock+since, at WriteSeq seq.
	since time.Duration
	seq   uint64

	waited *keepAliveWaited
}

type keepAliveWaited struct {
	afterDeadline bool        // the next Poll's first read follows a deadline (stepAfterDeadline)
	step          func() bool // stepAfterDeadline, made once
}

func (p *relayedStream) waited() *keepAliveWaited {
	if p.ka.waited == nil {
		p.ka.waited = &keepAliveWaited{step: p.stepAfterDeadline}
	}
	return p.ka.waited
}

// startKeepAlive starts the stream's keep-alives. A body read blocking
// gets its deadline now; a polled one's is set at each wait (armKeepAlive).
func (p *relayedStream) startKeepAlive() {
	p.ka.every = p.r.KeepAlive
	if p.ka.every <= 0 {
		p.ka.every = 0
		return
	}
	p.ka.since = time.Since(p.clock)
	if p.sb != nil {
		return
	}
	b := connBody(p.ub.body)
	if b == nil {
		p.ka.every = 0
		p.r.warnNoKeepAlive()
		return
	}
	b.OnReadDeadline(p.keepAliveDeadline)
	b.SetReadDeadline(p.keepAliveDue()) //nolint:errcheck // no deadline: no keep-alive
}

// connBody returns the wire.Body beneath body, nil when it is not read off
// a connection of the relay's.
func connBody(body any) *wire.Body {
	if g, ok := body.(*gunzipBody); ok {
		body = g.body
	}
	b, _ := body.(*wire.Body)
	return b
}

// noteConsumerSilence moves the silence's start to p.now when the consumer
// was written since.
func (p *relayedStream) noteConsumerSilence() {
	if seq := p.cw.WriteSeq(); seq != p.ka.seq {
		p.ka.seq, p.ka.since = seq, p.now.Sub(p.clock)
	}
}

func (p *relayedStream) keepAliveDue() time.Time { return p.clock.Add(p.ka.since + p.ka.every) }

// keepAliveNow reports whether a keep-alive is due at now, within a
// sixteenth: a timer that fires a little early must not wait again.
func (p *relayedStream) keepAliveNow(now time.Time) bool {
	return !now.Add(p.ka.every / 16).Before(p.keepAliveDue())
}

// keepAliveDeadline runs when the producer's read deadline passed, however
// the stream waited: it writes a keep-alive when one is due and returns
// the next one's deadline. A failed write is werr.
func (p *relayedStream) keepAliveDeadline() (next time.Time, err error) {
	p.noteConsumerSilence()
	if p.keepAliveNow(time.Now()) {
		if err := p.writeKeepAlive(); err != nil {
			p.werr = err
			return time.Time{}, err
		}
	}
	return p.keepAliveDue(), nil
}

func (p *relayedStream) writeKeepAlive() error {
	if err := p.st.KeepAlive(); err != nil {
		return err
	}
	if err := p.cw.Flush(); err != nil {
		return err
	}
	if p.tap != nil {
		p.tap.Flushed(p.st.Events)
	}
	p.ka.seq, p.ka.since = p.cw.WriteSeq(), time.Since(p.clock)
	return nil
}

// armKeepAlive is armParking with keep-alives. The deadline moves only
// when nearer or under half way there: an early deadline costs one extra
// Poll, where moving it on every wait would cost a timer update each.
func (p *relayedStream) armKeepAlive() bool {
	p.noteConsumerSilence()
	target := p.keepAliveDue()
	if park := p.now.Add(p.parkAfter); !p.noPark && park.Before(target) {
		target = park
	}
	if d := p.deadline; d.IsZero() || d.After(target) || d.Sub(p.now) < target.Sub(p.now)/2 {
		p.deadline = target
		p.sb.SetReadDeadline(target) //nolint:errcheck // no deadline: no keep-alive, and the stream does not park
	}
	return p.sb.Open()
}

// sendKeepAlive runs when the read deadline ended a Poll. A stream that
// does not park must move the deadline on: a Poll past it returns at once.
// It reports false when the write failed (werr).
func (p *relayedStream) sendKeepAlive() bool {
	if p.ka.every == 0 {
		return true
	}
	p.waited().afterDeadline = true
	next, err := p.keepAliveDeadline()
	if err != nil {
		return false
	}
	if p.noPark { // else it parks now (relay), with the deadline in the Poller's registration
		p.deadline = next
		p.sb.SetReadDeadline(next) //nolint:errcheck // no deadline: no keep-alive, and the stream does not park
	}
	return true
}

// parkDeadline is the deadline of a parking stream's registration: its
// next keep-alive, zero with none.
func (p *relayedStream) parkDeadline() time.Time {
	if p.ka.every == 0 {
		return time.Time{}
	}
	return p.keepAliveDue()
}

func (p *relayedStream) pollStep() func() bool {
	if w := p.ka.waited; w != nil && w.afterDeadline {
		return w.step
	}
	return p.step
}

// stepAfterDeadline is loop, but its first read touches the idle timeout
// only when it brings bytes: the producer's silence goes on through the
// relay's keep-alives.
func (p *relayedStream) stepAfterDeadline() bool {
	if !p.ka.waited.afterDeadline {
		return p.loop()
	}
	p.ka.waited.afterDeadline = false
	now := p.clock.Add(time.Since(p.clock))
	switch err := p.sc.Fill(p.body()); {
	case err == syscall.EAGAIN:
		p.now = now
		return p.awaitProducer()
	case err != nil:
		p.rerr = err
		return true
	}
	p.now = now
	p.ub.touch(now)
	return p.loop()
}
