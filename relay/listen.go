package relay

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// The backoff after a failed accept, as Go's net/http Server.Serve has it:
// 5 ms, doubled after each failure in a row, at most 1 s.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	acceptLogEvery   = time.Second // at most one log line per listener in this time
)

// RetryAccept returns ln whose Accept fails only once ln is closed. Any
// other error (EMFILE) is retried after a backoff, as Go's net/http server
// does, where fasthttp's Serve would stop the server.
//
// Each failure is counted with counted (nil: not counted), with its reason
// (acceptErrorReason), and logged at WARN at most once a second.
func RetryAccept(ln net.Listener, log *zap.Logger, counted func(reason string)) net.Listener {
	return &retryListener{Listener: ln, log: log, counted: counted, closed: make(chan struct{})}
}

type retryListener struct {
	net.Listener
	log     *zap.Logger
	counted func(reason string)

	closed    chan struct{} // closed by Close: ends a backoff
	closeOnce sync.Once

	mu       sync.Mutex
	logged   time.Time // the last log line
	unlogged int       // failures since it
}

func (l *retryListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			return c, nil
		}
		select {
		case <-l.closed:
			return nil, err
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
		l.failed(err, delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.closed: // the next Accept returns the listener's close
			t.Stop()
		}
	}
}

// Close closes the listener and ends an Accept's backoff.
func (l *retryListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func (l *retryListener) failed(err error, delay time.Duration) {
	reason := acceptErrorReason(err)
	if l.counted != nil {
		l.counted(reason)
	}
	l.mu.Lock()
	l.unlogged++
	now := time.Now()
	if now.Sub(l.logged) < acceptLogEvery {
		l.mu.Unlock()
		return
	}
	n := l.unlogged
	l.logged, l.unlogged = now, 0
	l.mu.Unlock()
	if l.log != nil {
		l.log.Warn("accepting connections failed: retrying after a backoff",
			zap.String("listen", l.Addr().String()), zap.String("reason", reason), zap.Error(err),
			zap.Int("errors", n), zap.Duration("backoff", delay))
	}
}

// acceptErrorReason names an accept error: emfile, enfile, enobufs,
// enomem or other.
func acceptErrorReason(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE):
		return "emfile"
	case errors.Is(err, syscall.ENFILE):
		return "enfile"
	case errors.Is(err, syscall.ENOBUFS):
		return "enobufs"
	case errors.Is(err, syscall.ENOMEM):
		return "enomem"
	}
	return "other"
}
