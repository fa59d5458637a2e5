//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the process's user and system CPU time so far: what a
// benchmark on a shared machine compares, where the wall clock counts the
// time other processes held the CPU.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
