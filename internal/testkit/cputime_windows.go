package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the process's user and system CPU time so far: what a
// benchmark on a shared machine compares, where the wall clock counts the
// time other processes held the CPU.
func CPUTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(ft syscall.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100 // 100 ns units
}
