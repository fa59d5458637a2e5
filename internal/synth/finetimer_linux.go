package synth

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fineTimer sleeps for sub-millisecond durations without holding the
// goroutine's P: a timerfd(2) read through the runtime's poller. Go's own
// timers wake in whole milliseconds when the process is otherwise idle
// (a 200 µs sleep takes about 1.08 ms), and nanosleep(2) keeps the P in a
// system call, so with one P (--pin) the streams' readers waited for the
// runtime's monitor to take it back.
type fineTimer struct {
	fd  uintptr
	f   *os.File // the descriptor in the poller; reads park the goroutine
	buf [8]byte
}

func newFineTimer() (*fineTimer, error) {
	const clockMonotonic = 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("timerfd_create", errno)
	}
	return &fineTimer{fd: fd, f: os.NewFile(fd, "timerfd")}, nil
}

// sleep returns after d (a positive duration), or at once with the error
// when the timer was closed.
func (t *fineTimer) sleep(d time.Duration) error {
	var spec struct{ interval, value syscall.Timespec }
	spec.value = syscall.NsecToTimespec(max(d.Nanoseconds(), 1))
	if _, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, t.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	_, err := t.f.Read(t.buf[:])
	return err
}

func (t *fineTimer) Close() error { return t.f.Close() }
