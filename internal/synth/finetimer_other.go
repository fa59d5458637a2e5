//go:build !linux

package synth

import "time"

// fineTimer is Go's timer where timerfd(2) is missing: pacing is then as
// coarse as the runtime's timers (about a millisecond on an idle process).
type fineTimer struct{}

func newFineTimer() (*fineTimer, error) { return &fineTimer{}, nil }

func (*fineTimer) sleep(d time.Duration) error {
	time.Sleep(d)
	return nil
}

func (*fineTimer) Close() error { return nil }
