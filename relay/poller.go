package relay

import "github.com/agui-relay/agui-relay/internal/wire"

// A Poller watches the consumers' connections of the Relays that share it
// for a hangup, and wakes their streams that parked (Relay.Poller), with
// the system's poller (epoll on Linux; elsewhere it watches nothing and
// the Relays work as without one). One serves every Relay of a process.
type Poller struct{ w *wire.Poller }

// NewPoller starts a Poller. Close it once the runs of the Relays that use
// it have ended (AwaitRuns).
func NewPoller() *Poller { return &Poller{wire.NewPoller()} }

// Close stops the Poller.
func (p *Poller) Close() error { return p.w.Close() }

// ReleaseMemory has the Poller return the process's unused memory to the
// system whenever no stream of its Relays holds a goroutine (all waiting
// parked, or none), as the serve command does.
func (p *Poller) ReleaseMemory() { p.w.ReleaseMemory() }

// poller returns the wire layer's Poller of r, nil when r has none.
func (r *Relay) poller() *wire.Poller {
	if r.Poller == nil {
		return nil
	}
	return r.Poller.w
}
