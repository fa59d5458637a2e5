//go:build !linux

package relay

import "net"

// Elsewhere than Linux every stream's consumer is watched by a goroutine of
// its own (watchConsumer).
type hangupWatcher struct{}

var hangups hangupWatcher

func (w *hangupWatcher) start()                                      {}
func (w *hangupWatcher) watch(net.Conn, *upstreamBody) (int32, bool) { return 0, false }
func (w *hangupWatcher) unwatch(net.Conn, int32)                     {}
