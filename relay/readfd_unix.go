//go:build unix

package relay

import "syscall"

// canPoll: the producer's connection can be read by descriptor
// (streamBody's polled mode).
const canPoll = true

// readFD reads the descriptor, retrying a read interrupted by a signal.
func readFD(fd int, p []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, p)
		if err != syscall.EINTR {
			if n < 0 {
				n = 0
			}
			return n, err
		}
	}
}
