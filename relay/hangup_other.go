//go:build !linux

package relay

import (
	"net"
	"syscall"
)

// Elsewhere than Linux every stream's consumer is watched by a goroutine of
// its own (watchConsumer), and streams never park.
type poller struct {
	memory memoryReleaser // the process's release of memory once no stream is open (memory.go)
}

var processPoller poller

func (w *poller) start()                                      {}
func (w *poller) watch(net.Conn, *upstreamBody) (int32, bool) { return 0, false }
func (w *poller) watchFunc(net.Conn, func()) (int32, bool)    { return 0, false }
func (w *poller) unwatch(net.Conn, int32)                     {}
func (w *poller) reserve(func()) int32                        { return 0 }
func (w *poller) parkRead(syscall.RawConn, int32) bool        { return false }
func (w *poller) unpark(syscall.RawConn, int32)               {}
func (w *poller) forget(int32)                                {}
