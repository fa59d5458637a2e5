package relay

import "github.com/agui-relay/agui-relay/internal/wire"

// A Poller watches the consumers' connections of the Relays that share it
// for a hangup and wakes their parked streams, with epoll on Linux;
// elsewhere it watches nothing.
type Poller struct{ w *wire.Poller }

// NewPoller starts a Poller. Close it once the runs of the Relays that use
// it have ended (AwaitRuns).
func NewPoller() *Poller { return &Poller{wire.NewPoller()} }

// Close stops the Poller.
func (p *Poller) Close() error { return p.w.Close() }

// ReleaseMemory has the Poller return unused memory to the system
// whenever no stream of its Relays runs on a goroutine.
func (p *Poller) ReleaseMemory() { p.w.ReleaseMemory() }

func (r *Relay) poller() *wire.Poller {
	if r.Poller == nil {
		return nil
	}
	return r.Poller.w
}
