package relay

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// What the tests change of a Relay's streams (streamTuning), and the tap
// they are told each run's end by.

// parkingAfter makes r's polled streams park after d without bytes
// from the producer, where production waits parkAfter.
func parkingAfter(r *Relay, d time.Duration) { tuned(r).parkAfter = d }

// endingWithin gives r's producers d to end their response after the
// requested run's end, where production gives runEndGrace.
func endingWithin(r *Relay, d time.Duration) { tuned(r).endGrace = d }

// armingWith makes r's parking streams arm their wake with arm, not
// r.Poller's ArmRead: a test's may refuse, or tell when a stream parked.
func armingWith(r *Relay, arm func(pl *wire.Poller, rc syscall.RawConn, token int32, deadline time.Time) bool) {
	tuned(r).armRead = arm
}

// countingMatches has t count its route lookups (Table.Match) in n.
func countingMatches(t *Table, n *atomic.Int32) { t.matched = func() { n.Add(1) } }

// tuned returns r's tuning, made at the first change.
func tuned(r *Relay) *streamTuning {
	if r.tuning == nil {
		r.tuning = &streamTuning{}
	}
	return r.tuning
}

// endTap is a RunTap told only each run's end (nil end: nothing), as the
// tests' report channels are fed.
type endTap struct {
	NopTap
	end func(*RunReport)
}

func (t endTap) End(rep *RunReport) {
	if t.end != nil {
		t.end(rep)
	}
}

// onEnd is a Relay.Tap that calls end (nil: none) with each run's report,
// after what tap (nil: none) returns for the run.
func onEnd(tap func(*RunReport) RunTap, end func(*RunReport)) func(*RunReport) RunTap {
	if end == nil {
		return tap
	}
	et := endTap{end: end}
	if tap == nil {
		return func(*RunReport) RunTap { return et }
	}
	return func(rep *RunReport) RunTap { return JoinTaps(tap(rep), et) }
}
