//go:build unix

package wire

import (
	"syscall"
	"unsafe"
)

// CanPoll: sockets can be read and written by descriptor (ReadFD,
// WritevFD), as the relay reads a producer and writes a consumer.
const CanPoll = true

// ReadFD reads the descriptor, retrying a read interrupted by a signal.
//
// The descriptor is a socket in non-blocking mode (every descriptor behind
// a net.Conn is), so read(2) returns at once: it is made as a raw system
// call, without the runtime's bookkeeping for calls that may block. That
// bookkeeping wakes the runtime's monitor thread on every entry when the
// process was idle, as it is between the events of a paced load.
func ReadFD(fd int, p []byte) (int, error) {
	return rawIO(syscall.SYS_READ, fd, p)
}

func rawIO(call uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if raceEnabled {
		return annotatedIO(call, fd, p)
	}
	for {
		n, _, errno := syscall.RawSyscall(call, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		default:
			return 0, errno
		}
	}
}

// annotatedIO is rawIO through the syscall package (see race_on.go).
func annotatedIO(call uintptr, fd int, p []byte) (int, error) {
	for {
		var n int
		var err error
		if call == syscall.SYS_READ {
			n, err = syscall.Read(fd, p)
		} else {
			n, err = syscall.Write(fd, p)
		}
		if err != syscall.EINTR {
			return max(n, 0), err
		}
	}
}

// WritevFD writes what is left of v after its first skip bytes to the
// descriptor, which is in non-blocking mode: it returns syscall.EAGAIN when
// the socket's buffer is full. Raw, as ReadFD: one writev(2), or write(2)
// when a single piece is left (and under the race detector, whose
// annotations only the syscall package's write carries). It returns the
// bytes written by this call.
func WritevFD(fd int, v *[4][]byte, skip int) (int, error) {
	var iov [4]syscall.Iovec
	var first []byte
	n := 0
	for _, b := range v {
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		b = b[skip:]
		skip = 0
		if n == 0 {
			first = b
		}
		iov[n].Base = &b[0]
		iov[n].SetLen(len(b))
		n++
	}
	if n <= 1 || raceEnabled {
		return rawIO(syscall.SYS_WRITE, fd, first)
	}
	for {
		w, _, errno := syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
		switch errno {
		case 0:
			return int(w), nil
		case syscall.EINTR:
			continue
		default:
			return 0, errno
		}
	}
}
