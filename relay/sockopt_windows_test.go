package relay

import "syscall"

// setReceiveBuffer sets a socket's SO_RCVBUF.
func setReceiveBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}

// setSendBuffer sets a socket's SO_SNDBUF.
func setSendBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n)
}
