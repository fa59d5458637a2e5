package wire

import (
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Poller watches connections' descriptors with one epoll instance and one
// goroutine, for everything that shares it: the peer's hangup of a
// connection (WatchHangup), and input on the connection of a stream that
// gave its goroutine up (Reserve, ArmRead), or its read deadline. A
// registration fires once (EPOLLONESHOT) and runs its action on the
// poller's goroutine, or on a timer's for a deadline; the action must not
// block.
//
// The connections stay registered with Go's own poller too: this second
// epoll instance only learns what to wake. A hangup watch asks for the
// hangup alone (EPOLLRDHUP, EPOLLHUP, EPOLLERR), so bytes the peer sends
// wake nothing.
//
// A Poller is made by NewPoller and ended by Close; its methods are safe
// for concurrent use.
type Poller struct {
	// life guards the descriptors: held shared by every epoll_ctl, taken
	// by Close to close them, so that no call reaches a reused descriptor.
	life   sync.RWMutex
	closed bool // Close was called: nothing more is registered
	epfd   int  // -1 when epoll is unavailable
	wake   [2]int
	done   chan struct{} // closed when the goroutine has ended

	mu   sync.Mutex
	next int32
	subs map[int32]registration // by the token in the epoll event

	memory memoryReleaser
}

// registration is what a token's event does, and the timer of its
// deadline (ArmRead), if any.
type registration struct {
	do    func()
	timer *time.Timer
}

const (
	hangupEvents = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT
	inputEvents  = syscall.EPOLLIN | hangupEvents
	// closeToken is the event of Close's write to the wake pipe: the
	// goroutine ends (Reserve never hands it out).
	closeToken = 0
)

// NewPoller returns a Poller and starts its goroutine. Where epoll is
// unavailable it returns a Poller that watches nothing (WatchHangup and
// ArmRead report false) and has no goroutine.
func NewPoller() *Poller {
	p := &Poller{epfd: -1, subs: map[int32]registration{}, done: make(chan struct{})}
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		close(p.done)
		return p
	}
	if err := syscall.Pipe2(p.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(fd)
		close(p.done)
		return p
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: closeToken}
	if err := syscall.EpollCtl(fd, syscall.EPOLL_CTL_ADD, p.wake[0], &ev); err != nil {
		syscall.Close(fd)
		syscall.Close(p.wake[0])
		syscall.Close(p.wake[1])
		close(p.done)
		return p
	}
	p.epfd = fd
	go p.loop()
	return p
}

// Close ends the poller's goroutine, and returns once it has ended, then
// closes its descriptors. The registrations left are dropped, their actions
// never run; the watches and parking asked for after Close fail, and no
// memory is released any more. Close the
// poller once nothing uses it: after the servers and runs that share it
// have ended.
func (p *Poller) Close() error {
	p.life.Lock()
	if p.closed {
		p.life.Unlock()
		return nil
	}
	p.closed = true
	p.life.Unlock()
	p.memory.stop()
	p.mu.Lock()
	for token, r := range p.subs {
		if r.timer != nil {
			r.timer.Stop()
			r.timer = nil
			p.subs[token] = r
		}
	}
	p.mu.Unlock()
	if p.epfd < 0 {
		return nil
	}
	syscall.Write(p.wake[1], []byte{0}) //nolint:errcheck // the pipe is empty: it has room
	<-p.done
	p.life.Lock()
	defer p.life.Unlock()
	syscall.Close(p.wake[0])
	syscall.Close(p.wake[1])
	err := syscall.Close(p.epfd)
	p.epfd = -1
	return err
}

// WatchHangup runs do, once, when rc's peer hangs up. It returns the
// registration's token, for Rewatch, Remove and Forget; ok=false when rc
// cannot be watched (no epoll, or the poller closed).
func (p *Poller) WatchHangup(rc syscall.RawConn, do func()) (token int32, ok bool) {
	token = p.Reserve(do)
	if !p.arm(rc, hangupEvents, token) {
		p.Forget(token)
		return 0, false
	}
	return token, true
}

// Rewatch makes do the action of a registration that has not fired, with
// no system call, and reports true; false when it fired already (or was
// forgotten), and then nothing is registered.
func (p *Poller) Rewatch(token int32, do func()) (armed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, armed := p.subs[token]
	if armed {
		r.do = do
		p.subs[token] = r
	}
	return armed
}

// Reserve returns a token whose event will run do, for ArmRead: the caller
// can publish the token before any event can fire.
func (p *Poller) Reserve(do func()) int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		p.next++
		if _, taken := p.subs[p.next]; !taken && p.next != closeToken {
			break
		}
	}
	p.subs[p.next] = registration{do: do}
	return p.next
}

// ArmRead arms token (from Reserve) to fire once rc has input, its peer
// hangs up, or deadline passes (zero: none), as a read deadline ends a
// wait in Go's own poller: epoll has no timeout per descriptor, so a timer
// fires it then. false when it cannot (no epoll, or the poller closed);
// the token stays reserved until Remove or Forget, and a registration that
// fired by its deadline stays in epoll until Remove.
func (p *Poller) ArmRead(rc syscall.RawConn, token int32, deadline time.Time) bool {
	if !p.arm(rc, inputEvents, token) {
		return false
	}
	if deadline.IsZero() {
		return true
	}
	p.life.RLock() // Close stops the timers after it set closed
	defer p.life.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.subs[token]; ok && !p.closed {
		var t *time.Timer // set under mu, which expire takes before it reads it
		t = time.AfterFunc(time.Until(deadline), func() { p.expire(token, &t) })
		r.timer = t
		p.subs[token] = r
	}
	return true
}

// expire fires token's registration at its deadline, unless it fired or
// was removed since (its timer is another then).
func (p *Poller) expire(token int32, t **time.Timer) {
	p.mu.Lock()
	r, ok := p.subs[token]
	if !ok || r.timer != *t {
		p.mu.Unlock()
		return
	}
	delete(p.subs, token)
	p.mu.Unlock()
	r.do()
}

// take ends token's registration under mu and returns its action.
func (p *Poller) take(token int32) func() {
	r := p.subs[token]
	delete(p.subs, token)
	if r.timer != nil {
		r.timer.Stop()
	}
	return r.do
}

// Remove ends a registration, fired or not; call it before closing the
// connection (a later event for the token is ignored).
func (p *Poller) Remove(rc syscall.RawConn, token int32) {
	p.Forget(token)
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed || p.epfd < 0 {
		return
	}
	rc.Control(func(fd uintptr) { //nolint:errcheck // a closed connection is out of epoll already
		epollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) //nolint:errcheck
	})
}

// Forget ends a registration's action with no system call: for a
// connection being closed, which closing takes out of epoll.
func (p *Poller) Forget(token int32) {
	p.mu.Lock()
	p.take(token)
	p.mu.Unlock()
}

func (p *Poller) arm(rc syscall.RawConn, events uint32, token int32) bool {
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed || p.epfd < 0 {
		return false
	}
	var cerr error
	err := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: events, Fd: token}
		cerr = epollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		if cerr == syscall.EEXIST { // an earlier registration's removal failed
			cerr = epollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
	})
	return err == nil && cerr == nil
}

// epollCtl is epoll_ctl(2) made as a raw system call: it never blocks (see
// Conn for why raw).
func epollCtl(epfd, op, fd int, ev *syscall.EpollEvent) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (p *Poller) loop() {
	defer close(p.done)
	var evs [128]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(p.epfd, evs[:], -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return
		}
		for i := range evs[:n] {
			token := evs[i].Fd
			if token == closeToken {
				return
			}
			p.mu.Lock()
			do := p.take(token)
			p.mu.Unlock()
			if do != nil {
				do()
			}
		}
	}
}
