//go:build !linux

package wire

import (
	"syscall"
	"time"
)

// Poller would watch connections' descriptors; elsewhere than Linux it
// watches none: WatchHangup and ArmRead report false, and the caller
// falls back to a goroutine of its own. It still counts streams for the
// release of memory (Enter, Leave, ReleaseMemory).
type Poller struct {
	memory memoryReleaser
}

// NewPoller returns a Poller that watches nothing.
func NewPoller() *Poller { return &Poller{} }

// Close ends the release of memory; there is no goroutine to end.
func (p *Poller) Close() error {
	p.memory.stop()
	return nil
}

func (p *Poller) WatchHangup(syscall.RawConn, func()) (int32, bool) { return 0, false }
func (p *Poller) Rewatch(int32, func()) bool                        { return false }
func (p *Poller) Reserve(func()) int32                              { return 0 }
func (p *Poller) ArmRead(syscall.RawConn, int32, time.Time) bool    { return false }
func (p *Poller) Remove(syscall.RawConn, int32)                     {}
func (p *Poller) Forget(int32)                                      {}
