package relay

import (
	"sync/atomic"
	"testing"
	"time"
)

// countingQuiet returns a quietMemory with the given delays whose releases
// are counted instead of made.
func countingQuiet(after, gap time.Duration) (*quietMemory, *atomic.Int32) {
	var releases atomic.Int32
	return &quietMemory{after: after, gap: gap, release: func() { releases.Add(1) }}, &releases
}

// Memory is released only once no stream runs, and not again within the
// gap however often the relay goes quiet.
func TestQuietMemoryWaitsForEveryStream(t *testing.T) {
	q, releases := countingQuiet(5*time.Millisecond, time.Hour)
	q.enter()
	q.enter()
	q.leave()
	time.Sleep(50 * time.Millisecond) // ten times the quiet delay
	if n := releases.Load(); n != 0 {
		t.Fatalf("%d releases while a stream runs", n)
	}
	q.leave()
	waitFor(t, "a release once the last stream left", func() bool { return releases.Load() == 1 })
	q.enter()
	q.leave()
	time.Sleep(50 * time.Millisecond)
	if n := releases.Load(); n != 1 {
		t.Fatalf("%d releases within the gap", n)
	}
}

// A release that comes due within the gap waits for the gap's end instead
// of being dropped.
func TestQuietMemoryReleasesAfterTheGap(t *testing.T) {
	q, releases := countingQuiet(time.Millisecond, 30*time.Millisecond)
	q.enter()
	q.leave()
	waitFor(t, "the first release", func() bool { return releases.Load() == 1 })
	q.enter()
	q.leave()
	waitFor(t, "the release deferred to the gap's end", func() bool { return releases.Load() == 2 })
}

// The pause after a release grows with what the release took: a relay
// whose collections are slow releases less often.
func TestQuietMemoryPausesInProportionToTheRelease(t *testing.T) {
	var releases atomic.Int32
	q := &quietMemory{after: time.Millisecond, gap: time.Millisecond, factor: 10,
		release: func() { time.Sleep(20 * time.Millisecond); releases.Add(1) }}
	q.enter()
	q.leave()
	waitFor(t, "the first release", func() bool { return releases.Load() == 1 })
	q.enter()
	q.leave()
	// The pause is at least 10 × 20 ms from the first release's end.
	time.Sleep(100 * time.Millisecond)
	if n := releases.Load(); n != 1 {
		t.Fatalf("%d releases within ten times the first one's duration", n)
	}
	waitFor(t, "the release after the pause", func() bool { return releases.Load() == 2 })
}

// A stream that goes quiet while a release is under way gets its release
// after the pause, not never, and not while the first still runs, however
// long that takes.
func TestQuietMemoryReleasesWhatCameDuringARelease(t *testing.T) {
	var releases, running atomic.Int32
	inRelease := make(chan struct{})
	proceed := make(chan struct{})
	q := &quietMemory{after: time.Millisecond, gap: 10 * time.Millisecond, factor: 1}
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
	<-inRelease
	q.enter()
	q.leave()                         // arms the timer, which fires during the release
	time.Sleep(50 * time.Millisecond) // well past the quiet delay and the gap
	close(proceed)
	waitFor(t, "the release deferred past the first", func() bool { return releases.Load() == 2 })
}
