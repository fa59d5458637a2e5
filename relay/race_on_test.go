//go:build race

package relay

// raceDetector: the race detector's build writes to a socket piece by
// piece (wire.WritevFD).
const raceDetector = true
