package relay

import (
	"net"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// watchHangup calls cancel once conn's peer hangs up, through pl: one
// goroutine for every connection, not one per stream parked in a Read
// (watchConsumer, the fallback). ok=false when conn cannot be watched so.
//
// A socketConn stays registered from its first run to its close: later
// runs swap the registration's action, with no system call.
func watchHangup(pl *wire.Poller, conn net.Conn, cancel func()) (token int32, ok bool) {
	if pl == nil {
		return 0, false
	}
	sc, isSocket := conn.(*socketConn)
	if isSocket {
		if token = sc.hangup.Load(); token != 0 {
			if !sc.watcher.Rewatch(token, cancel) {
				cancel() // the consumer hung up between runs
			}
			return token, true
		}
	}
	rc, err := rawConnOf(conn)
	if err != nil {
		return 0, false
	}
	token, ok = pl.WatchHangup(rc, cancel)
	if ok && isSocket {
		sc.watcher = pl // published by the store of hangup
		sc.hangup.Store(token)
	}
	return token, ok
}

// unwatchHangup ends a registration of watchHangup; call it before closing
// conn. A socketConn's stays, doing nothing until its next run or close.
func unwatchHangup(pl *wire.Poller, conn net.Conn, token int32) {
	if sc, ok := conn.(*socketConn); ok && sc.hangup.Load() == token {
		sc.watcher.Rewatch(token, betweenRuns)
		return
	}
	if rc, err := rawConnOf(conn); err == nil {
		pl.Remove(rc, token)
	} else {
		pl.Forget(token)
	}
}

// betweenRuns does nothing: the server's read of the next request sees the
// hangup.
func betweenRuns() {}
