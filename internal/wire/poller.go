package wire

// A Poller is made by NewPoller and ended by Close. Besides its watching
// (poller_linux.go; elsewhere it watches nothing), it counts the streams
// of everything that uses it that hold a goroutine, for the release of
// memory once none does (memory.go).

// Enter counts a stream that takes a goroutine (starts, or wakes from
// parking).
func (p *Poller) Enter() { p.memory.enter() }

// Leave counts a stream that gives its goroutine up (parks or ends); the
// last one to leave arms the release of memory, when it was asked for.
func (p *Poller) Leave() { p.memory.leave() }

// ReleaseMemory makes the poller give the heap's free memory back to the
// operating system, with two forced collections, whenever every stream it
// counts (Enter, Leave) has been without a goroutine for a second: parked,
// or none open. The releases are paced to take about 1% of the time at
// most. Without it a Poller never forces a collection.
func (p *Poller) ReleaseMemory() { p.memory.want() }

// Running returns the count of streams that hold a goroutine (Enter less
// Leave). Only tests read it (the relay's among them, which an
// export_test.go of wire's cannot serve).
func (p *Poller) Running() int64 { return p.memory.running.Load() }
