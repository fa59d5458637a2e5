package relay

import (
	"net"
	"sync"
	"syscall"
)

// On Linux, consumers' connections are watched for a hangup by one shared
// epoll instance and one goroutine for the whole process, instead of one
// goroutine per stream parked in a Read (whose stack, started at the
// runtime's average size, was about 8 KiB of every idle stream). The
// connection stays registered with Go's own poller too; this second epoll
// instance asks only for the hangup (EPOLLRDHUP, EPOLLHUP, EPOLLERR), once
// (EPOLLONESHOT), so bytes a consumer sends after its request wake nothing.
// A connection the watcher cannot register (not a socket, a TLS wrapper)
// falls back to watchConsumer's goroutine.

type hangupWatcher struct {
	once sync.Once
	epfd int // -1 when epoll is unavailable

	mu   sync.Mutex
	next int32
	subs map[int32]*upstreamBody // by the token in the epoll event
}

var hangups hangupWatcher

const hangupEvents = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT

func (w *hangupWatcher) init() {
	w.epfd = -1
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	w.epfd = fd
	w.subs = map[int32]*upstreamBody{}
	go w.loop()
}

// start starts the watcher's goroutine, once for the process.
func (w *hangupWatcher) start() { w.once.Do(w.init) }

// watch cancels u with errConsumerGone once conn's peer hangs up. It
// returns the registration for unwatch, ok=false when conn cannot be
// watched this way.
func (w *hangupWatcher) watch(conn net.Conn, u *upstreamBody) (token int32, ok bool) {
	w.start()
	sc, isSys := conn.(syscall.Conn)
	if w.epfd < 0 || !isSys {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	w.mu.Lock()
	for {
		w.next++
		if _, taken := w.subs[w.next]; !taken && w.next != 0 {
			break
		}
	}
	token = w.next
	w.subs[token] = u
	w.mu.Unlock()
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: hangupEvents, Fd: token}
		cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		w.mu.Lock()
		delete(w.subs, token)
		w.mu.Unlock()
		return 0, false
	}
	return token, true
}

// unwatch ends a registration of watch; call it before closing conn (a
// later event for the token is ignored).
func (w *hangupWatcher) unwatch(conn net.Conn, token int32) {
	w.mu.Lock()
	delete(w.subs, token)
	w.mu.Unlock()
	if rc, err := conn.(syscall.Conn).SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { //nolint:errcheck // closed next anyway
			syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) //nolint:errcheck
		})
	}
}

func (w *hangupWatcher) loop() {
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
			u := w.subs[evs[i].Fd]
			delete(w.subs, evs[i].Fd)
			w.mu.Unlock()
			if u != nil {
				u.cancel(errConsumerGone)
			}
		}
	}
}
