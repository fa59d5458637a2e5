package wire

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// memoryReleaser gives the heap's free memory back to the operating system
// once no stream has had a goroutine for idleAfter: every stream open is
// parked (its agent thinking, its user reading) or none is open. A Poller
// holds one, counting the streams of everything that uses it (Enter,
// Leave); it releases only once asked to (Poller.ReleaseMemory).
//
// Why: what an idle relay holds beyond its streams' own few KiB is garbage
// left by how they began (each run's input, request and state) and the
// heap's room for its next cycle. The runtime's scavenger returns free pages only down to that
// room, which is what an idle relay needs least. A release is two forced
// collections, whose cost grows with the live heap: a release is followed
// by a pause of releaseGapFactor times what it took, and at least
// minReleaseGap, before the next, so that a process whose streams keep
// going idle spends about 1% of its time releasing at most, and a small
// one gives memory back each time it goes idle. Never while any stream
// relays.
type memoryReleaser struct {
	running atomic.Int64 // streams with a goroutine: relaying, waiting in it, or ending
	wanted  atomic.Bool  // the releases were asked for (Poller.ReleaseMemory)

	mu    sync.Mutex
	timer timer
	next  time.Time // the earliest time of the next release; zero before the first

	releasing bool // a release is under way
	missed    bool // the timer fired meanwhile: fire again once it may

	// Tests set these; zero values mean the defaults.
	after, gap time.Duration // idleAfter, minReleaseGap
	factor     int           // releaseGapFactor
	release    func()        // releaseMemory
	clock      clock         // systemClock
}

// clock is where memoryReleaser reads the time and arms its timer.
type clock interface {
	now() time.Time
	afterFunc(d time.Duration, f func()) timer
}

// timer is a timer armed by a clock.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// systemClock is the time package's clock.
type systemClock struct{}

func (systemClock) now() time.Time                            { return time.Now() }
func (systemClock) afterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

func (q *memoryReleaser) clockOf() clock {
	if q.clock == nil {
		return systemClock{}
	}
	return q.clock
}

const (
	// idleAfter is how long no stream may have run before a release:
	// streams that all went idle at once are released about their parking
	// delay plus idleAfter later.
	idleAfter = time.Second
	// minReleaseGap and releaseGapFactor bound how often a process whose
	// streams keep going idle releases: not within minReleaseGap, nor
	// within releaseGapFactor times the last release's duration, of its end.
	minReleaseGap    = time.Second
	releaseGapFactor = 100
)

// enter counts a stream that takes a goroutine (starts or wakes).
func (q *memoryReleaser) enter() { q.running.Add(1) }

// want makes q release from now on.
func (q *memoryReleaser) want() { q.wanted.Store(true) }

// stop makes q release no more: a release armed is dropped.
func (q *memoryReleaser) stop() {
	q.wanted.Store(false)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
	}
}

// leave counts a stream that gives its goroutine up (parks or ends); the
// last one to leave arms the release, when it is wanted.
func (q *memoryReleaser) leave() {
	if q.running.Add(-1) == 0 && q.wanted.Load() {
		q.arm(cmp.Or(q.after, idleAfter))
	}
}

func (q *memoryReleaser) arm(after time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer == nil {
		q.timer = q.clockOf().afterFunc(after, q.fire)
	} else {
		q.timer.Reset(after)
	}
}

// fire releases when every stream is still idle. A stream that ran since the
// timer was armed re-arms it when it leaves, so an idle period shorter than
// idleAfter releases nothing.
func (q *memoryReleaser) fire() {
	if q.running.Load() != 0 || !q.wanted.Load() {
		return
	}
	q.mu.Lock()
	if q.releasing {
		q.missed = true
		q.mu.Unlock()
		return
	}
	clk := q.clockOf()
	if wait := q.next.Sub(clk.now()); !q.next.IsZero() && wait > 0 {
		q.timer.Reset(wait)
		q.mu.Unlock()
		return
	}
	q.releasing = true
	release := q.release
	q.mu.Unlock()
	if release == nil {
		release = releaseMemory
	}
	start := clk.now()
	release()
	end := clk.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	pause := max(cmp.Or(q.gap, minReleaseGap), time.Duration(cmp.Or(q.factor, releaseGapFactor))*end.Sub(start))
	q.next = end.Add(pause)
	q.releasing = false
	if q.missed {
		q.missed = false
		q.timer.Reset(pause)
	}
}

// releaseMemory collects twice, so that what sync.Pools held before the
// first collection (kept through one as its victim cache) is freed too,
// then returns the free memory.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
