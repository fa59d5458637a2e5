//go:build !race

package wire

// raceEnabled: see race_on.go.
const raceEnabled = false
