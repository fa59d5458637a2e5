//go:build race

package wire

// raceEnabled: under the race detector, socket reads and writes are made
// through the syscall package, whose annotations tell the detector that a
// write to a socket happens before the read of it at the other end (raw
// calls carry none, and tests that order goroutines through sockets would
// report races that are not).
const raceEnabled = true
