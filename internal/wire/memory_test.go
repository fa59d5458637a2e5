package wire

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when a test moves it: its
// timers fire in advance, on the caller's goroutine, in the order they come
// due.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c     *fakeClock
	at    time.Time
	armed bool
	f     func()
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{c: c, at: c.t.Add(d), armed: true, f: f}
	c.timers = append(c.timers, ft)
	return ft
}

func (ft *fakeTimer) Reset(d time.Duration) bool {
	ft.c.mu.Lock()
	defer ft.c.mu.Unlock()
	was := ft.armed
	ft.at, ft.armed = ft.c.t.Add(d), true
	return was
}

func (ft *fakeTimer) Stop() bool {
	ft.c.mu.Lock()
	defer ft.c.mu.Unlock()
	was := ft.armed
	ft.armed = false
	return was
}

// advance moves the time on by d, firing each timer that comes due by then
// at its time.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.t.Add(d)
	for {
		var next *fakeTimer
		for _, ft := range c.timers {
			if ft.armed && !ft.at.After(end) && (next == nil || ft.at.Before(next.at)) {
				next = ft
			}
		}
		if next == nil {
			break
		}
		next.armed = false
		if next.at.After(c.t) {
			c.t = next.at
		}
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	if end.After(c.t) {
		c.t = end
	}
	c.mu.Unlock()
}

// pass moves the time on by d without firing timers: what a release takes.
func (c *fakeClock) pass(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// armed reports whether a timer waits to fire.
func (c *fakeClock) armed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ft := range c.timers {
		if ft.armed {
			return true
		}
	}
	return false
}

// countingReleaser returns a memoryReleaser with the given delays whose releases
// are counted instead of made.
func countingReleaser(after, gap time.Duration) (*memoryReleaser, *atomic.Int32) {
	var releases atomic.Int32
	q := &memoryReleaser{after: after, gap: gap, release: func() { releases.Add(1) }}
	q.want()
	return q, &releases
}

// fakeReleaser is countingReleaser on a fake clock.
func fakeReleaser(after, gap time.Duration) (*memoryReleaser, *atomic.Int32, *fakeClock) {
	q, releases := countingReleaser(after, gap)
	clk := &fakeClock{t: time.Unix(0, 0)}
	q.clock = clk
	return q, releases, clk
}

func wantReleases(t *testing.T, releases *atomic.Int32, want int32, when string) {
	t.Helper()
	if n := releases.Load(); n != want {
		t.Fatalf("%d releases %s, want %d", n, when, want)
	}
}

// Memory is released only once no stream runs, and not again within the
// gap however often the streams go idle.
func TestMemoryReleaserWaitsForEveryStream(t *testing.T) {
	q, releases, clk := fakeReleaser(5*time.Millisecond, time.Hour)
	q.enter()
	q.enter()
	q.leave()
	if clk.armed() {
		t.Fatal("a release is armed while a stream runs")
	}
	clk.advance(time.Hour)
	wantReleases(t, releases, 0, "while a stream runs")
	q.leave()
	clk.advance(5*time.Millisecond - 1)
	wantReleases(t, releases, 0, "before the idle delay")
	clk.advance(1)
	wantReleases(t, releases, 1, "once the last stream left")
	q.enter()
	q.leave()
	clk.advance(time.Hour - 1)
	wantReleases(t, releases, 1, "within the gap")
	clk.advance(1)
	wantReleases(t, releases, 2, "at the gap's end")
}

// An idle period shorter than the idle delay releases nothing.
func TestMemoryReleaserNeedsTheWholeDelay(t *testing.T) {
	q, releases, clk := fakeReleaser(5*time.Millisecond, time.Millisecond)
	for range 10 {
		q.enter()
		q.leave()
		clk.advance(4 * time.Millisecond)
	}
	q.enter()
	clk.advance(time.Hour)
	wantReleases(t, releases, 0, "with no idle period as long as the delay")
	q.leave()
	clk.advance(5 * time.Millisecond)
	wantReleases(t, releases, 1, "after the delay")
}

// A release that comes due within the gap waits for the gap's end instead
// of being dropped.
func TestMemoryReleaserReleasesAfterTheGap(t *testing.T) {
	q, releases, clk := fakeReleaser(time.Millisecond, 30*time.Millisecond)
	q.enter()
	q.leave()
	clk.advance(time.Millisecond)
	wantReleases(t, releases, 1, "after the idle delay")
	q.enter()
	q.leave()
	clk.advance(30*time.Millisecond - 1)
	wantReleases(t, releases, 1, "within the gap")
	clk.advance(1)
	wantReleases(t, releases, 2, "at the gap's end")
}

// The pause after a release grows with what the release took: a process
// whose collections are slow releases less often.
func TestMemoryReleaserPausesInProportionToTheRelease(t *testing.T) {
	var releases atomic.Int32
	clk := &fakeClock{t: time.Unix(0, 0)}
	q := &memoryReleaser{after: time.Millisecond, gap: time.Millisecond, factor: 10, clock: clk,
		release: func() { clk.pass(20 * time.Millisecond); releases.Add(1) }}
	q.want()
	q.enter()
	q.leave()
	clk.advance(time.Millisecond)
	wantReleases(t, &releases, 1, "after the idle delay")
	q.enter()
	q.leave()
	// The pause is 10 × 20 ms from the first release's end.
	clk.advance(200*time.Millisecond - 1)
	wantReleases(t, &releases, 1, "within ten times the first one's duration")
	clk.advance(1)
	wantReleases(t, &releases, 2, "after the pause")
}

// A stream that goes idle while a release is under way gets its release
// after the pause, not never, and not while the first still runs, however
// long that takes.
func TestMemoryReleaserReleasesWhatCameDuringARelease(t *testing.T) {
	var releases, running atomic.Int32
	inRelease := make(chan struct{})
	proceed := make(chan struct{})
	clk := &fakeClock{t: time.Unix(0, 0)}
	q := &memoryReleaser{after: time.Millisecond, gap: 10 * time.Millisecond, factor: 1, clock: clk}
	q.want()
	q.release = func() {
		if running.Add(1) > 1 {
			t.Error("two releases at once")
		}
		defer running.Add(-1)
		if releases.Add(1) == 1 {
			close(inRelease)
			<-proceed
		}
	}
	q.enter()
	q.leave()
	first := make(chan struct{})
	go func() { clk.advance(time.Millisecond); close(first) }()
	<-inRelease
	q.enter()
	q.leave()                          // arms the timer, which fires during the release
	clk.advance(50 * time.Millisecond) // well past the idle delay and the gap
	wantReleases(t, &releases, 1, "while the first runs")
	close(proceed)
	<-first
	// The pause runs from the first release's end: 50 ms (factor 1 × its
	// 50 ms, over the 10 ms gap).
	clk.advance(50*time.Millisecond - 1)
	wantReleases(t, &releases, 1, "within the pause")
	clk.advance(1)
	wantReleases(t, &releases, 2, "after the pause")
}

// Nothing is released until it is asked for: streams coming and going
// arm no timer.
func TestMemoryReleaserReleasesOnlyWhenWanted(t *testing.T) {
	var releases atomic.Int32
	clk := &fakeClock{t: time.Unix(0, 0)}
	q := &memoryReleaser{after: time.Millisecond, gap: time.Millisecond, clock: clk, release: func() { releases.Add(1) }}
	for range 3 {
		q.enter()
		q.leave()
		clk.advance(time.Hour)
	}
	if clk.armed() {
		t.Fatal("a release is armed that was not asked for")
	}
	wantReleases(t, &releases, 0, "unwanted")
	q.want()
	q.enter()
	q.leave()
	clk.advance(time.Millisecond)
	wantReleases(t, &releases, 1, "once wanted")
}

// A new Poller counts streams but releases nothing until asked to.
func TestPollerReleasesMemoryOnlyWhenAsked(t *testing.T) {
	p := NewPoller()
	defer p.Close()
	if p.memory.wanted.Load() {
		t.Fatal("a new Poller releases memory")
	}
	p.ReleaseMemory()
	if !p.memory.wanted.Load() {
		t.Fatal("ReleaseMemory did not make it release")
	}
}

// A closed Poller releases nothing more: a release armed before its Close
// is dropped.
func TestClosedPollerReleasesNothing(t *testing.T) {
	var releases atomic.Int32
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := NewPoller()
	p.memory = memoryReleaser{after: time.Millisecond, gap: time.Millisecond, clock: clk, release: func() { releases.Add(1) }}
	p.ReleaseMemory()
	p.Enter()
	p.Leave()
	if !clk.armed() {
		t.Fatal("no release armed once the only stream left")
	}
	p.Close()
	clk.advance(time.Hour)
	wantReleases(t, &releases, 0, "after Close")
	p.Enter()
	p.Leave()
	clk.advance(time.Hour)
	wantReleases(t, &releases, 0, "for a stream that left after Close")
}
