package relay

import (
	"math"
	"sync"
	"syscall"
	"time"
)

// Keep-alives: while the producer is silent mid-stream, the relay writes
// the consumer an SSE comment (event.KeepAliveFrame) each Relay.KeepAlive
// of the consumer's silence, so that a proxy between them (nginx's
// proxy_read_timeout, a load balancer's idle timeout) does not cut it and
// a consumer that left is found at the write. The stream waits for the
// producer only between whole, flushed frames, so a keep-alive never
// splits an event.
//
// Three ways, by how the stream waits:
//   - polled, in its goroutine: the read deadline is the nearer of parking
//     and the next keep-alive (armKeepAlive); relay writes it (sendKeepAlive);
//   - parked: a timer runs the stream on as wake does (keepAliveParked);
//   - in a blocking read (TLS, gzip: no descriptor to poll): the stream
//     holds writerMu except while it reads, and a timer writes the
//     keep-alive when it can lock it (keepAliveTick).
//
// The read after a keep-alive's deadline does not count for the idle
// timeout unless it brings bytes (stepAfterDeadline).

// keepAlive is a stream's keep-alive state, small in the stream: what only
// a stream that waited needs is made then (waited).
type keepAlive struct {
	every time.Duration // 0: no keep-alives

	// The consumer's silence began at clock+since, when the writer's
	// WriteSeq was seq.
	since time.Duration
	seq   uint64

	waited *keepAliveWaited
}

// keepAliveWaited is the keep-alive state of a stream that waited for a
// keep-alive's deadline, parked, or reads a body that blocks.
type keepAliveWaited struct {
	afterDeadline bool        // the next Poll's first read follows a deadline (stepAfterDeadline)
	blocking      bool        // the body cannot be polled: reads block
	step          func() bool // stepAfterDeadline, made once

	timer    *time.Timer // parked or blocking streams: the next keep-alive
	writerMu sync.Mutex  // blocking streams: the consumer's writer, unlocked while the stream reads
}

// waited returns the stream's keepAliveWaited, made at the first call.
func (p *relayedStream) waited() *keepAliveWaited {
	if p.ka.waited == nil {
		p.ka.waited = &keepAliveWaited{step: p.stepAfterDeadline}
	}
	return p.ka.waited
}

// startKeepAlive readies the stream's keep-alives; a body that cannot be
// polled gets its keep-alives from a timer (keepAliveTick).
func (p *relayedStream) startKeepAlive() {
	p.ka.every = p.r.KeepAlive
	if p.ka.every <= 0 {
		p.ka.every = 0
		return
	}
	p.ka.since = time.Since(p.clock)
	if p.sb == nil {
		w := p.waited()
		w.blocking = true
		w.writerMu.Lock()
		w.timer = time.AfterFunc(p.ka.every, p.keepAliveTick)
	}
}

// noteConsumerSilence moves the silence's start to the last read (p.now)
// when the consumer was written since.
func (p *relayedStream) noteConsumerSilence() {
	if seq := p.cw.WriteSeq(); seq != p.ka.seq {
		p.ka.seq, p.ka.since = seq, p.now.Sub(p.clock)
	}
}

// keepAliveDue returns when the next keep-alive is due.
func (p *relayedStream) keepAliveDue() time.Time { return p.clock.Add(p.ka.since + p.ka.every) }

// keepAliveNow reports whether a keep-alive is due at now, or within a
// sixteenth of the interval: a timer that fires a little early must not
// wait again.
func (p *relayedStream) keepAliveNow(now time.Time) bool {
	return !now.Add(p.ka.every / 16).Before(p.keepAliveDue())
}

// writeKeepAlive writes and flushes a keep-alive.
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

// armKeepAlive is armParking with keep-alives: the read deadline is the
// nearer of parking and the next keep-alive. It moves only when nearer, or
// under half way there: an early deadline costs one extra Poll, where
// moving it on every wait would cost a timer update each.
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

// sendKeepAlive runs when the read deadline ended a Poll: it writes a
// keep-alive when one is due and, for a stream that does not park, moves
// the passed deadline on (a Poll past its deadline returns at once). It
// reports false when the consumer could not be written (werr).
func (p *relayedStream) sendKeepAlive() bool {
	if p.ka.every == 0 {
		return true
	}
	p.waited().afterDeadline = true
	if p.keepAliveNow(time.Now()) {
		if err := p.writeKeepAlive(); err != nil {
			p.werr = err
			return false
		}
	}
	if p.noPark { // else it parks now (relay), which clears the deadline
		p.deadline = p.keepAliveDue()
		p.sb.SetReadDeadline(p.deadline) //nolint:errcheck // no deadline: no keep-alive, and the stream does not park
	}
	return true
}

// pollStep is the next Poll's step: stepAfterDeadline after a deadline,
// else loop.
func (p *relayedStream) pollStep() func() bool {
	if w := p.ka.waited; w != nil && w.afterDeadline {
		return w.step
	}
	return p.step
}

// stepAfterDeadline is loop, but its first read counts for the idle
// timeout (touch) only when it brings bytes: the producer's silence goes on
// through the relay's keep-alives. Nothing is left to scan or flush then.
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

// parkedKeepAlive returns how long until a parking stream's next
// keep-alive, 0 with none, and makes its timer. park calls it before the
// stream is published as parked.
func (p *relayedStream) parkedKeepAlive() time.Duration {
	if p.ka.every == 0 {
		return 0
	}
	if w := p.waited(); w.timer == nil {
		w.timer = time.AfterFunc(time.Duration(math.MaxInt64), p.keepAliveParked)
	}
	return max(time.Until(p.keepAliveDue()), 1)
}

// armParkedKeepAlive arms the parked stream's keep-alive timer; if the
// stream woke meanwhile, keepAliveParked finds it running and returns.
func (p *relayedStream) armParkedKeepAlive(wait time.Duration) {
	if wait > 0 {
		p.ka.waited.timer.Reset(wait)
	}
}

// keepAliveParked runs on a parked stream's keep-alive timer: it claims
// the stream as wake does and serves it here with its read deadline
// passed, so relay writes the keep-alive and parks again at once, with no
// goroutine started.
func (p *relayedStream) keepAliveParked() {
	if !p.parked.CompareAndSwap(true, false) {
		return // woken already, or ended
	}
	p.unpark()
	p.deadline = interruptNow
	p.sb.SetReadDeadline(interruptNow) //nolint:errcheck // no deadline: the Poll waits for the producer, as after a wake
	p.serve()
}

// keepAliveTick runs on a blocking stream's keep-alive timer. writerMu is
// free only while the stream reads, between frames: then it writes the
// keep-alive when due. A failed write cancels the producer's request,
// which ends the read.
func (p *relayedStream) keepAliveTick() {
	w := p.ka.waited
	if !w.writerMu.TryLock() {
		if !p.ub.finished() {
			w.timer.Reset(p.ka.every)
		}
		return
	}
	defer w.writerMu.Unlock()
	p.noteConsumerSilence()
	if now := time.Now(); !p.keepAliveNow(now) {
		w.timer.Reset(p.keepAliveDue().Sub(now))
		return
	}
	if err := p.writeKeepAlive(); err != nil {
		p.werr = err
		p.ub.cancel(errConsumerGone)
		return
	}
	w.timer.Reset(p.ka.every)
}
