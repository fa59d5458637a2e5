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
