//go:build !linux

package harness

// fineTimerClosable: Go's timers have nothing to close.
const fineTimerClosable = false
