package relay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/internal/redact"
	"github.com/agui-relay/agui-relay/internal/wire"
	"github.com/agui-relay/agui-relay/negotiate"
)

// A stream's life, read top to bottom (run), on the goroutine its carrier
// gives it (carrier.go):
//
//  1. begin: the consumer's hangup watched, the event.Stream made.
//  2. relay: read → scan → frame → flush (loop) until the stream is over.
//     A stream whose producer is silent for parkAfter parks; a new
//     goroutine runs it on from here when bytes arrive or a keep-alive is
//     due (wake).
//  3. finish: a RUN_ERROR when one is owed, the last flush, the release of
//     both connections, the report.

func (p *relayedStream) run() {
	p.begin()
	p.serve()
}

// relayedStream is one run's event stream to the consumer: made by the
// request's handler (respond), given its connection and writer by the
// carrier (handOver, hijack), then run. It owns resp and the consumer's
// writer. A parked stream costs no goroutine stack, most of what an idle
// stream used.
type relayedStream struct {
	r    *Relay
	cw   *consumerWriter
	ub   *upstreamBody
	resp *fasthttp.Response
	rep  *RunReport

	st  *event.Stream
	sc  *event.Scanner
	tap RunTap
	sb  *wire.Body // the body, when it can be polled (and so parked)

	werr, rerr error       // what ended the loop
	step       func() bool // p.loop, made once: it escapes into wire.Body.Poll

	parkAfter time.Duration
	poller    *wire.Poller // nil: the stream does not park, and is not counted
	now       time.Time    // the last read (NoteRead)
	clock     time.Time    // the stream's start; now is read from it on the monotonic clock alone
	deadline  time.Time
	parked    atomic.Bool
	noPark    bool
	ended     bool      // the requested run ended (checkEnd)
	endedAt   time.Time // until the grace is armed (armGrace)
	token     int32     // the poller registration while parked

	ka keepAlive // the consumer's keep-alives (keepalive.go)
}

const parkAfter = time.Second

// streamTuning is what a test changes of a Relay's streams (export_test.go);
// nil in production. Zero fields mean the constants.
type streamTuning struct {
	parkAfter time.Duration
	endGrace  time.Duration
	// armRead, when set, replaces pl.ArmRead: it may refuse, or tell when a
	// stream parked.
	armRead func(pl *wire.Poller, rc syscall.RawConn, token int32, deadline time.Time) bool
}

func (p *relayedStream) tune(t *streamTuning) {
	if t.parkAfter != 0 {
		p.parkAfter = t.parkAfter
	}
}

// begin is phase 1.
func (p *relayedStream) begin() {
	r, cw, ub, rep := p.r, p.cw, p.ub, p.rep
	if tok, ok := watchHangup(r.poller(), cw.conn, func() { ub.cancel(errConsumerGone) }); ok {
		cw.watcher, cw.hangup, cw.watched = r.poller(), tok, true
	} else {
		// The watching goroutine would read the consumer's next request.
		cw.closeAfter()
		go watchConsumer(cw.conn, ub)
	}

	p.parkAfter = parkAfter
	p.poller = r.poller()
	if t := r.tuning; t != nil {
		p.tune(t)
	}
	p.noPark = cw.onHijackHandler || p.poller == nil || !r.ReuseGoroutines
	if r.IdleTimeout > 0 {
		ub.watchWrites(&cw.ChunkWriter)
	}
	p.clock = time.Now()
	p.enter()
	p.st = r.translator.NewStream(rep.Consumer, r.ProducerVersion, &cw.ChunkWriter)
	p.st.ProducerPython = r.ProducerPython
	p.tap = rep.tap
	if p.tap != nil {
		p.tap.Streaming(rep.Consumer, r.ProducerVersion)
		p.st.Tap, p.st.Counts = p.tap, r.newCounts()
	}
	p.st.OnPlan = func(plan negotiate.Plan) {
		for _, warning := range plan.Warnings {
			r.log.Warn(warning, zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID))
		}
	}
	p.sc = event.NewIdleScanner(nil, r.MaxFrame)
	p.step = p.loop
	if sb, ok := ub.body.(*wire.Body); ok && sb.Polled() {
		p.sb = sb
		p.sc.Polled = true
		// Events came with the producer's header: one write for both.
		if sb.Buffered() {
			cw.HoldHeader()
		}
		sb.OnClose(p.wake)
	}
	p.startKeepAlive()
}

// relay is phase 2: it runs the loop until the stream is over (true) or
// parked (false).
//
// A polled body runs the loop inside one RawConn read (wire.Body.Poll)
// across waits: a new RawConn read resets the runtime poller's readiness,
// which would cost a read(2) that finds nothing before every wait.
func (p *relayedStream) relay() (over bool) {
	if p.sb == nil {
		p.loop() // its reads wait for the producer
		return true
	}
	for {
		polled, err := p.sb.Poll(p.pollStep())
		switch {
		case !polled:
			p.loop() // closed before it could be polled: reads now say so
			return true
		case err == nil || p.rerr != nil || p.werr != nil:
			return true
		case errors.Is(err, os.ErrDeadlineExceeded) && p.sb.Open():
			if !p.sendKeepAlive() {
				return true
			}
			if p.noPark {
				continue // a keep-alive's deadline: wait on
			}
			if p.park() {
				return false
			}
			p.noPark = true // no poller here: wait on in this goroutine
		default:
			p.rerr = err
			return true
		}
	}
}

// loop pumps the stream and decides its end between runs (checkEnd). It
// reports false when the producer has nothing more for now, true when the
// stream is over: rerr (io.EOF at the response's end) or werr says why.
func (p *relayedStream) loop() (over bool) {
	for {
		rerr, werr := p.st.Pump(p.sc, p.body())
		switch {
		case werr != nil:
			p.werr = werr
			return true
		case rerr == syscall.EAGAIN:
			return p.awaitProducer()
		case rerr != nil:
			p.rerr = rerr
			return true
		case !p.ended:
			p.checkEnd()
		}
	}
}

// awaitProducer readies the wait after a read that found nothing. It
// reports true when the body was closed meanwhile: the stream must not wait.
func (p *relayedStream) awaitProducer() (over bool) {
	if !p.endedAt.IsZero() {
		p.armGrace()
	}
	return !p.armParking()
}

// producerBody is the stream as the producer's body Pump reads: a
// conversion of the stream's pointer, with no allocation.
type producerBody relayedStream

func (p *relayedStream) body() *producerBody { return (*producerBody)(p) }

// NoteRead touches the idle timeout for the read that follows, on the
// monotonic clock alone (one reading where time.Now makes two). A read a
// polled body serves from its buffer (Drained) is not timed, unless a slow
// write came between (touchAfterWrite).
func (p *producerBody) NoteRead() {
	if p.sb == nil || !p.sb.Drained() || p.ub.touchAfterWrite() {
		p.now = p.clock.Add(time.Since(p.clock))
		p.ub.touch(p.now)
	}
}

// Read reads the producer's body. A body that cannot be polled blocks
// here, and writes its keep-alives from here (OnReadDeadline).
func (p *producerBody) Read(b []byte) (int, error) { return p.ub.body.Read(b) }

// runEndGrace is how long the producer has, after the requested run's
// terminal event, to end its response itself (keeping its connection
// reusable) before the relay ends it.
const runEndGrace = 100 * time.Millisecond

// checkEnd ends the stream within the grace once the requested run (its
// runId) had its terminal event, or the stream failed before any run: that
// run is the exchange's last (spec 003), and many agents keep the
// connection open after it.
func (p *relayedStream) checkEnd() {
	st := p.st
	if st.InRun {
		return
	}
	if st.Runs > 0 && (p.rep.RunID == "" || st.RunID != p.rep.RunID) {
		return
	}
	p.ended = true
	if p.sb == nil {
		p.ub.endWithin(p.grace())
		return
	}
	// Armed at the first wait: most responses end with the run, before a
	// wait, and need no timer.
	p.endedAt = p.now
}

func (p *relayedStream) armGrace() {
	p.ub.endWithin(p.grace() - p.now.Sub(p.endedAt))
	p.endedAt = time.Time{}
}

func (p *relayedStream) grace() time.Duration {
	if t := p.r.tuning; t != nil && t.endGrace > 0 {
		return t.endGrace
	}
	return runEndGrace
}

// armParking moves the read deadline that ends a wait to park only when it
// is under parkAfter/2 away: a timer update every parkAfter/2, not one per
// wait. It reports false when the body was closed meanwhile.
func (p *relayedStream) armParking() bool {
	if p.ka.every > 0 {
		return p.armKeepAlive()
	}
	if p.noPark {
		return p.sb.Open()
	}
	if p.deadline.Sub(p.now) < p.parkAfter/2 {
		p.deadline = p.now.Add(p.parkAfter)
		p.sb.SetReadDeadline(p.deadline) //nolint:errcheck // no deadline: the stream just does not park
	}
	return p.sb.Open()
}

// park registers the stream's connection with the poller and reports true
// when the goroutine may end.
func (p *relayedStream) park() bool {
	p.deadline = time.Time{}
	if p.sb.SetReadDeadline(p.deadline) != nil {
		return false
	}
	// The token is published (parked's store) before any wake can read it.
	p.token = p.poller.Reserve(p.wake)
	p.parked.Store(true)
	if !p.armRead(p.parkDeadline()) {
		if !p.parked.CompareAndSwap(true, false) {
			return true // a close woke the stream already
		}
		p.poller.Remove(p.sb.RawConn(), p.token)
		return false
	}
	if !p.sb.Open() {
		p.wake() // closed while parking: its wake may have come too early
	}
	return true
}

func (p *relayedStream) armRead(deadline time.Time) bool {
	if t := p.r.tuning; t != nil && t.armRead != nil {
		return t.armRead(p.poller, p.sb.RawConn(), p.token, deadline)
	}
	return p.poller.ArmRead(p.sb.RawConn(), p.token, deadline)
}

// wake runs a parked stream on in a new goroutine: its producer sent
// bytes, its body was closed, or its registration's deadline passed. Any
// number of calls start one.
func (p *relayedStream) wake() {
	if p.parked.CompareAndSwap(true, false) {
		go p.resume()
	}
}

func (p *relayedStream) resume() {
	p.unpark()
	p.serve()
}

func (p *relayedStream) unpark() {
	p.enter()
	p.poller.Remove(p.sb.RawConn(), p.token)
}

// serve runs the stream from phase 2 to its end, then the connection's
// next stream while the carrier gives one. Only begin, unpark and serve
// count streams on goroutines (enter, leave).
func (p *relayedStream) serve() {
	for {
		if !p.relay() {
			p.leave()
			return // parked
		}
		reusable := p.finish()
		p.leave()
		if !reusable {
			return
		}
		next, ok := p.r.nextStream(p.cw.conn, p.cw.srv)
		if !ok {
			return
		}
		p = next
		p.begin()
	}
}

// finish is phase 3. It reports whether the consumer's connection may
// serve another request.
func (p *relayedStream) finish() (reusable bool) {
	r, ub, st, rep := p.r, p.ub, p.st, p.rep
	werr, rerr := p.werr, p.rerr
	abort := ub.why()
	switch {
	case werr != nil || abort == errConsumerGone:
		if abort != errConsumerGone && errors.Is(werr, os.ErrDeadlineExceeded) {
			abort = errConsumerStalled // a write waited out ConsumerStallTimeout
		} else {
			abort = errConsumerGone
		}
		ub.cancel(abort)
	case abort == errRunEnded && st.Owed():
		// A run started after the requested one's end: cut off.
		abort = &abortError{CodeUpstreamBroken, "the producer started a run after the requested run ended"}
		if _, err := st.Fail(abort.Cause, abort.Code); err != nil {
			werr = err
		}
	case rerr == io.EOF || abort == errRunEnded:
		// A complete stream either way.
		abort = nil
		if st.Owed() {
			r.log.Warn("the producer ended the stream without RUN_FINISHED or RUN_ERROR; relayed as it was",
				zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID), zap.String("upstream", redact.URL(rep.URL)))
		}
	default:
		if abort == nil {
			if errors.Is(rerr, event.ErrFrameTooLarge) {
				abort = &abortError{CodeFrameTooLarge, fmt.Sprintf("the producer sent an event larger than %d bytes (--max-frame)", p.sc.MaxFrame())}
			} else {
				abort = &abortError{CodeUpstreamBroken, "the producer's stream broke"}
			}
			ub.cancel(abort)
		}
		if _, err := st.Fail(abort.Cause, abort.Code); err != nil {
			werr = err
		}
	}
	if st.NotJSON > 0 {
		r.log.Warn("the producer sent events that are not JSON; relayed untouched for the consumer to report",
			zap.Int("count", st.NotJSON), zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID), zap.String("upstream", redact.URL(rep.URL)))
	}
	gone := abort == errConsumerGone || abort == errConsumerStalled
	if werr == nil && !gone { // a gone or stalled consumer is written no more
		werr = p.cw.End()
		if werr == nil && p.tap != nil {
			p.tap.Flushed(st.Events)
		}
	}
	st.Close()
	p.sc.Release()
	if rerr == io.EOF {
		rerr = nil
	}
	ub.finish(rerr)
	// After ub.finish the watcher's cancel is a no-op: the connection can go.
	keep := false
	if werr == nil && !gone {
		keep = p.cw.handBack()
	} else {
		p.cw.Close() //nolint:errcheck // the consumer is gone or cannot be written
	}
	fasthttp.ReleaseResponse(p.resp)
	r.untrack(ub)

	rep.Duration = time.Since(rep.Start)
	rep.Events, rep.Bytes, rep.Runs, rep.Terminal = st.Events, st.Bytes, st.Runs, st.Terminal
	rep.Counts = st.Counts
	plan := st.Plan()
	rep.Producer, rep.Translated = plan.Producer, plan.Translate
	if abort != nil {
		rep.Abort = abort.Code
		if !errors.Is(rerr, wire.ErrBodyClosed) { // the relay's own close: the abort says why
			rep.Err = rerr
		}
		if abort == errConsumerGone && werr != nil {
			rep.Err = werr
		}
	}
	r.report(rep)
	r.releaseCounts(rep)
	return keep
}

// enter and leave count the stream taking and giving up a goroutine.
func (p *relayedStream) enter() {
	if p.poller != nil {
		p.poller.Enter()
	}
}

func (p *relayedStream) leave() {
	if p.poller != nil {
		p.poller.Leave()
	}
}

func (r *Relay) newCounts() *event.Counts {
	if c, ok := r.counts.Get().(*event.Counts); ok {
		*c = event.Counts{}
		return c
	}
	return &event.Counts{}
}

func (r *Relay) releaseCounts(rep *RunReport) {
	if c := rep.Counts; c != nil {
		rep.Counts = nil
		r.counts.Put(c)
	}
}
