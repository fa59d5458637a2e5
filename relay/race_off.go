//go:build !race

package relay

// raceEnabled: see race_on.go.
const raceEnabled = false
