//go:build !race

package relay

// raceDetector: see race_on_test.go.
const raceDetector = false
