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
// proxy_read_timeout, a load balancer's idle timeout) does not cut it, and
// so that a consumer that left is noticed at the write. The consumer is
// between two frames whenever the stream waits for the producer: the relay
// writes only whole frames, and flushes them before it reads.
//
// How a keep-alive finds the stream depends on how it waits:
//   - in its goroutine, on a polled body: the read deadline (armParking)
//     is the nearer of parking and the next keep-alive; when it passes,
//     relay writes the keep-alive (sendKeepAlive), then parks or waits on;
//   - parked: a timer takes the stream as wake does and writes the
//     keep-alive on the timer's goroutine, then parks it again
//     (keepAliveParked);
//   - in a blocking read (a body that cannot be polled: TLS, gzip): the
//     stream holds the gate except while it reads, and a timer writes the
//     keep-alive when it can take the gate (keepAliveTick).
//
// A keep-alive is not the producer's: the read that follows it does not
// count for the idle timeout (stepAfterDeadline).

// keepAlive is a stream's keep-alive state; the stream's goroutine, or
// whoever holds the stream (parked: its taker; gated: the gate's holder),
// uses it. It is kept small, in the stream: what only a stream that waited
// long needs is made then (waited).
type keepAlive struct {
	every time.Duration // 0: no keep-alives

	// The consumer's silence: it began since after the stream's clock
	// (relayedStream.clock), when the consumer's writer had moved to seq
	// (a write since moves it on).
	since time.Duration
	seq   uint64

	waited *keepAliveWaited
}

// keepAliveWaited is the keep-alive state of a stream that waited for a
// keep-alive's deadline, parked, or waits in blocking reads (gated).
type keepAliveWaited struct {
	// quiet makes the next Poll's first read not count for the idle
	// timeout (stepAfterDeadline): it follows a keep-alive's deadline, not bytes.
	afterDeadline bool
	blocking      bool
	step          func() bool // stepAfterDeadline

	timer    *time.Timer // parked or gated streams: the next keep-alive's
	writerMu sync.Mutex  // gated streams: held by the stream but while it reads
}

// waited returns the stream's keepAliveWaited, made at the first call.
func (p *relayedStream) waited() *keepAliveWaited {
	if p.ka.waited == nil {
		p.ka.waited = &keepAliveWaited{step: p.stepAfterDeadline}
	}
	return p.ka.waited
}

// startKeepAlive readies the stream's keep-alives (begin): the interval is
// the Relay's, and a stream whose body cannot be polled waits in blocking
// reads, so its keep-alives come from a timer through the gate.
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

// noteConsumerSilence notes the start of the consumer's silence when it was written
// since the last note: at the read that followed (p.now), the stream's
// last before it waits.
func (p *relayedStream) noteConsumerSilence() {
	if seq := p.cw.WriteSeq(); seq != p.ka.seq {
		p.ka.seq, p.ka.since = seq, p.now.Sub(p.clock)
	}
}

// keepAliveDue returns when the next keep-alive is due.
func (p *relayedStream) keepAliveDue() time.Time { return p.clock.Add(p.ka.since + p.ka.every) }

// keepAliveNow reports whether a keep-alive is due at now, or so soon
// (within a sixteenth of the interval) that a timer or deadline that
// fired a little early must not wait again for it.
func (p *relayedStream) keepAliveNow(now time.Time) bool {
	return !now.Add(p.ka.every / 16).Before(p.keepAliveDue())
}

// writeKeepAlive writes a keep-alive and flushes it: the consumer's
// silence starts again.
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

// armKeepAlive is armParking for a stream that sends keep-alives: the
// read deadline ends the coming wait at the nearer of parking (when the
// stream parks) and the next keep-alive. It is moved only when that is
// nearer than it, or it is under half of the way there: a deadline that
// comes early costs a wait that resumes (relay), not a timer update per
// wait.
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

// sendKeepAlive runs when the read deadline ended a wait (relay): it
// writes a keep-alive when one is due, moves the deadline of a stream that
// waits on, which has passed, to the next (a Poll whose deadline passed
// returns at once, without a read), and has the Poll that follows not count its first read
// for the idle timeout (stepAfterDeadline). It reports false when the consumer
// could not be written (werr).
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

// pollStep is the step of relay's next Poll: stepAfterDeadline after a deadline,
// else loop.
func (p *relayedStream) pollStep() func() bool {
	if w := p.ka.waited; w != nil && w.afterDeadline {
		return w.step
	}
	return p.step
}

// stepAfterDeadline is loop, but for the Poll's first read after a deadline: made
// before loop's (nothing is left to scan or flush then), it is noted for
// the idle timeout (touch) only when it brings bytes. The producer's
// silence goes on through the relay's keep-alives.
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

// parkedKeepAlive returns how long after now a stream about to park is
// due its next keep-alive, 0 when it sends none; it makes the timer that
// will take the stream up then (armParkedKeepAlive). Called by park before
// the stream is published as parked.
func (p *relayedStream) parkedKeepAlive() time.Duration {
	if p.ka.every == 0 {
		return 0
	}
	if w := p.waited(); w.timer == nil {
		w.timer = time.AfterFunc(time.Duration(math.MaxInt64), p.keepAliveParked)
	}
	return max(time.Until(p.keepAliveDue()), 1)
}

// armParkedKeepAlive arms the parked stream's keep-alive timer to fire in
// wait (parkedKeepAlive's). The stream may be running on already: the
// timer then finds it taken (keepAliveParked).
func (p *relayedStream) armParkedKeepAlive(wait time.Duration) {
	if wait > 0 {
		p.ka.waited.timer.Reset(wait)
	}
}

// keepAliveParked runs on a parked stream's keep-alive timer: it takes the
// stream as wake does and runs it on here (serve) with its read deadline
// passed, so that relay's first Poll returns at once and relay writes the
// keep-alive when it is due and parks the stream again (sendKeepAlive,
// park), with no goroutine started. When the write fails the stream ends
// here (the consumer is gone); when it cannot park again, it runs on here.
func (p *relayedStream) keepAliveParked() {
	if !p.parked.CompareAndSwap(true, false) {
		return // woken already, or ended
	}
	p.unpark()
	p.deadline = interruptNow
	p.sb.SetReadDeadline(interruptNow) //nolint:errcheck // no deadline: the Poll waits for the producer, as after a wake
	p.serve()
}

// keepAliveTick runs on a gated stream's keep-alive timer. When the stream
// is in its read (the gate is free), the consumer is between frames: it
// writes the keep-alive when due, and arms the timer for the next. A write
// that fails cancels the producer's request, which ends the read (the
// consumer is gone). When the stream is busy with the consumer, or over,
// the gate is taken: the timer is armed again unless the stream is over.
func (p *relayedStream) keepAliveTick() {
	w := p.ka.waited // made before the timer, never changed
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
