package relay

import (
	"net"
	"sync"
	"syscall"
	"unsafe"
)

// On Linux, consumers' connections are watched for a hangup by one shared
// epoll instance and one goroutine for the whole process, instead of one
// goroutine per stream parked in a Read (whose stack, started at the
// runtime's average size, was about 8 KiB of every idle stream). The
// connection stays registered with Go's own poller too; this second epoll
// instance asks only for the hangup (EPOLLRDHUP, EPOLLHUP, EPOLLERR), once
// (EPOLLONESHOT), so bytes a consumer sends after its request wake nothing.
// A connection the watcher cannot register (not a socket, a TLS wrapper)
// falls back to watchConsumer's goroutine. A consumer's connection served
// by the relay's Listener stays registered across its runs (watch).
//
// The same instance wakes parked streams (relayedStream.park): a producer's
// connection registered for input, once, whose stream has no goroutine
// until the event comes.

type poller struct {
	once sync.Once
	epfd int // -1 when epoll is unavailable

	mu   sync.Mutex
	next int32
	subs map[int32]func() // by the token in the epoll event: what the event does

	memory memoryReleaser // the process's release of memory once every stream is parked (memory.go)
}

// processPoller is the process's one poller: one epoll instance and goroutine
// for every stream, however many relays and routes there are.
var processPoller poller

const (
	hangupEvents = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT
	inputEvents  = syscall.EPOLLIN | hangupEvents
)

func (w *poller) init() {
	w.epfd = -1
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	w.epfd = fd
	w.subs = map[int32]func(){}
	go w.loop()
}

// start starts the watcher's goroutine, once for the process.
func (w *poller) start() { w.once.Do(w.init) }

// watch cancels u with errConsumerGone once conn's peer hangs up. It
// returns the registration for unwatch, ok=false when conn cannot be
// watched this way.
//
// A socketConn (a consumer's connection served by the relay's Listener)
// stays registered from its first run to its close: the runs that follow
// on the kept connection swap the registration's action, with no system
// call.
func (w *poller) watch(conn net.Conn, u *upstreamBody) (token int32, ok bool) {
	return w.watchFunc(conn, func() { u.cancel(errConsumerGone) })
}

// watchFunc is watch calling cancel on the hangup: for the wait for the
// producer's head (headWait), before there is a body to cancel.
func (w *poller) watchFunc(conn net.Conn, cancel func()) (token int32, ok bool) {
	sc, kept := conn.(*socketConn)
	if kept {
		if token = sc.hangup.Load(); token != 0 {
			w.mu.Lock()
			_, armed := w.subs[token]
			if armed {
				w.subs[token] = cancel
			}
			w.mu.Unlock()
			if !armed {
				cancel() // the consumer hung up between runs
			}
			return token, true
		}
	}
	rc, err := rawConnOf(conn)
	if err != nil {
		return 0, false
	}
	token, ok = w.register(rc, hangupEvents, cancel)
	if ok && kept {
		sc.hangup.Store(token)
	}
	return token, ok
}

// unwatch ends a registration of watch; call it before closing conn (a
// later event for the token is ignored). A socketConn's registration stays
// (see watch), doing nothing until the connection's next run or its close.
func (w *poller) unwatch(conn net.Conn, token int32) {
	if sc, kept := conn.(*socketConn); kept && sc.hangup.Load() == token {
		w.mu.Lock()
		if _, armed := w.subs[token]; armed {
			w.subs[token] = betweenRuns
		}
		w.mu.Unlock()
		return
	}
	if rc, err := rawConnOf(conn); err == nil {
		w.unregister(rc, token)
	} else {
		w.forget(token)
	}
}

// betweenRuns is a kept connection's hangup action while no run is on it:
// the server's read of the next request sees the hangup.
func betweenRuns() {}

// reserve returns a token whose event will call do, for parkRead. The
// caller publishes the token before any event can fire.
func (w *poller) reserve(do func()) int32 {
	w.start()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		w.next++
		if _, taken := w.subs[w.next]; !taken && w.next != 0 {
			break
		}
	}
	w.subs[w.next] = do
	return w.next
}

// parkRead arms token (from reserve) to fire once rc has input or its peer
// hangs up. false when it cannot (no epoll here); the token stays reserved.
func (w *poller) parkRead(rc syscall.RawConn, token int32) bool {
	return w.epfd >= 0 && w.arm(rc, inputEvents, token)
}

// unpark ends a registration of parkRead, fired or not.
func (w *poller) unpark(rc syscall.RawConn, token int32) { w.unregister(rc, token) }

func (w *poller) register(rc syscall.RawConn, events uint32, do func()) (token int32, ok bool) {
	w.start()
	if w.epfd < 0 {
		return 0, false
	}
	token = w.reserve(do)
	if !w.arm(rc, events, token) {
		w.forget(token)
		return 0, false
	}
	return token, true
}

func (w *poller) arm(rc syscall.RawConn, events uint32, token int32) bool {
	var cerr error
	err := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: events, Fd: token}
		cerr = epollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		if cerr == syscall.EEXIST { // an earlier registration's removal failed
			cerr = epollCtl(w.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
	})
	return err == nil && cerr == nil
}

func (w *poller) unregister(rc syscall.RawConn, token int32) {
	w.forget(token)
	rc.Control(func(fd uintptr) { //nolint:errcheck // a closed connection is out of epoll already
		epollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) //nolint:errcheck
	})
}

// forget ends a registration's action; for a socketConn's kept one, as the
// connection closes (closing the descriptor takes it out of epoll).
func (w *poller) forget(token int32) {
	w.mu.Lock()
	delete(w.subs, token)
	w.mu.Unlock()
}

// epollCtl is epoll_ctl(2) made as a raw system call: it never blocks, and
// a consumer's connection makes one, a parked stream two each time it
// parks (see socketConn for why raw).
func epollCtl(epfd, op, fd int, ev *syscall.EpollEvent) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (w *poller) loop() {
	var evs [128]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(w.epfd, evs[:], -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return
		}
		for i := range evs[:n] {
			w.mu.Lock()
			do := w.subs[evs[i].Fd]
			delete(w.subs, evs[i].Fd)
			w.mu.Unlock()
			if do != nil {
				do()
			}
		}
	}
}
