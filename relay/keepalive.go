package relay

import (
	"math"
	"sync"
	"syscall"
	"time"
)

// Keep-alives (Relay.KeepAlive) are written only between whole, flushed
// frames, so one never splits an event. Three ways, by how the stream waits:
//   - polled: the read deadline is the nearer of parking and the next
//     keep-alive (armKeepAlive, sendKeepAlive);
//   - parked: a timer runs the stream on as wake does (keepAliveParked);
//   - in a blocking read (TLS, gzip: no descriptor to poll): the stream
//     holds writerMu except while it reads, and a timer writes the
//     keep-alive when it can lock it (keepAliveTick).

// keepAlive is a stream's keep-alive state; what only a stream that waited
// needs is made then (waited), to keep the stream small.
type keepAlive struct {
	every time.Duration // 0: no keep-alives

	// The consumer's silence began at clock+since, at WriteSeq seq.
	since time.Duration
	seq   uint64

	waited *keepAliveWaited
}

type keepAliveWaited struct {
	afterDeadline bool // the next Poll's first read follows a deadline (stepAfterDeadline)
	blocking      bool
	step          func() bool // stepAfterDeadline, made once

	timer    *time.Timer // parked or blocking streams: the next keep-alive
	writerMu sync.Mutex  // blocking streams: the consumer's writer, unlocked while the stream reads
}

func (p *relayedStream) waited() *keepAliveWaited {
	if p.ka.waited == nil {
		p.ka.waited = &keepAliveWaited{step: p.stepAfterDeadline}
	}
	return p.ka.waited
}

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

// parkedKeepAlive returns how long until a parking stream's next
// keep-alive, 0 with none. park calls it before the stream is published as
// parked.
func (p *relayedStream) parkedKeepAlive() time.Duration {
	if p.ka.every == 0 {
		return 0
	}
	if w := p.waited(); w.timer == nil {
		w.timer = time.AfterFunc(time.Duration(math.MaxInt64), p.keepAliveParked)
	}
	return max(time.Until(p.keepAliveDue()), 1)
}

// armParkedKeepAlive arms the timer; if the stream woke meanwhile,
// keepAliveParked finds it running and returns.
func (p *relayedStream) armParkedKeepAlive(wait time.Duration) {
	if wait > 0 {
		p.ka.waited.timer.Reset(wait)
	}
}

// keepAliveParked claims a parked stream as wake does and serves it on the
// timer's goroutine with its deadline passed: relay writes the keep-alive
// and parks again, with no goroutine started.
func (p *relayedStream) keepAliveParked() {
	if !p.parked.CompareAndSwap(true, false) {
		return // woken already, or ended
	}
	p.unpark()
	p.deadline = interruptNow
	p.sb.SetReadDeadline(interruptNow) //nolint:errcheck // no deadline: the Poll waits for the producer, as after a wake
	p.serve()
}

// keepAliveTick runs on a blocking stream's timer. writerMu is free only
// while the stream reads, between frames. A failed write cancels the
// producer's request, which ends the read.
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
