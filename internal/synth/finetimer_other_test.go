//go:build !linux

package synth

// fineTimerClosable: Go's timers have nothing to close.
const fineTimerClosable = false
