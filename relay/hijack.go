package relay

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// An event stream is answered on the consumer's connection itself, taken
// over from the server once the run's handler returns (fasthttp's Hijack,
// with no response of the server's): the goroutine that reads the producer
// writes the status line, the headers and the chunked body to the socket.
// One goroutine carries each stream, and the process's one hangup watcher
// (hangup_linux.go; elsewhere a goroutine per stream, watchConsumer) notices
// the consumer going away, where the server's own body
// streaming would hand every block from the relay's goroutine to the
// server's through a pipe (a copy and a wakeup per flush, and a third
// goroutine and the server's read buffer held for the whole stream).
//
// What the server no longer does for a hijacked connection, the relay does:
// it answers the headers the server would have (see respondHead), bounds
// each write by a deadline (a consumer that stops reading for that long is
// gone), closes the connection at the end of the stream, and keeps its own
// registry of the runs in flight (track, Active, EndRuns), since the
// server's Shutdown no longer counts them: call AwaitRuns after it.

// streamWriteTimeout bounds a write to a consumer that does not read, when
// the relay has no IdleTimeout: the server's WriteTimeout for ordinary
// answers.
const streamWriteTimeout = 2 * time.Minute

// respond answers the consumer with the event stream of a run: the headers
// set on ctx.Response now, then what pump writes. ctx must not be used
// after the handler returns; resp and ub belong to the stream from here.
//
// Keep-alive: when the consumer can take another request on the connection
// (HTTP/1.1, no Connection: close, nothing sent after its request), the
// stream ends with the chunked body's end and the connection goes back to
// the server (ServeConn) for the consumer's next request, as any keep-alive
// answer would; otherwise the answer says Connection: close and the stream
// closes the connection.
func (r *Relay) respond(ctx *fasthttp.RequestCtx, ub *upstreamBody, resp *fasthttp.Response, rep *RunReport) {
	chunked := ctx.Request.Header.IsHTTP11()
	srv := r.srv.Load()
	keep := chunked && srv != nil && !ctx.Request.Header.ConnectionClose()
	// sc is the consumer's connection when the relay's Listener served it
	// (nil otherwise). It renders each answer's head into the same buffer:
	// its runs come one after the other, and a head is written before the
	// run's stream ends.
	sc, _ := ctx.Conn().(*socketConn)
	var dst []byte
	if sc != nil {
		dst = sc.head[:0]
	}
	head := respondHead(&ctx.Response.Header, chunked, keep, dst)
	if sc != nil {
		sc.head = head
	}
	done := ctx.Done()
	timeout := r.IdleTimeout
	if timeout <= 0 {
		timeout = streamWriteTimeout
	}
	handover := handoverConn(sc)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if keep && sentMore(c, sc) {
			keep, head = false, withClose(head)
		}
		// The server's buffered reader of the connection is left behind
		// with c (Server.KeepHijackedConns): nothing reads the request any
		// more, so it goes to the garbage collector with the hijacked
		// connection instead of staying in use for the stream's life.
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			c = u.UnsafeConn()
		}
		w := newConsumerWriter(c, chunked, timeout)
		w.holds = srv == nil
		if keep {
			w.srv, w.shutdown = srv, done
		}
		st := hijackedStream{r, w, head, ub, resp, rep}
		switch {
		case handover != nil:
			handover.handoff <- st // to the goroutine that served the request
		case srv == nil:
			// A server not made by Server: it may close the connection
			// once this handler returns (KeepHijackedConns unset), so the
			// stream runs here to its end (holds: it does not park), and
			// the connection is not kept.
			st.run()
		default:
			go st.serveConnection()
		}
	})
}

// sentMore reports whether the consumer sent more than its request before
// the server's reader was left behind (a pipelined request): those bytes
// go with the reader, so the connection cannot serve another request.
// Only what the reader buffered counts: sc, the connection under c when
// the relay's Listener served it (else nil), told not to wait, or else a
// past deadline, keeps the kernel out of it.
func sentMore(c net.Conn, sc *socketConn) bool {
	var one [1]byte
	if sc != nil {
		sc.noWait = true
		n, _ := c.Read(one[:])
		sc.noWait = false
		return n > 0
	}
	if c.SetReadDeadline(interruptNow) != nil {
		return true
	}
	n, _ := c.Read(one[:])
	return n > 0 || c.SetReadDeadline(time.Time{}) != nil
}

// withClose returns a head rendered for keep-alive as respondHead renders
// it without: Connection: close is the last header line fasthttp writes.
// Rare (a pipelined request, no epoll watcher), so not rendered up front.
func withClose(head []byte) []byte {
	end := len(head) - len("\r\n")
	return append(append(head[:end:end], "Connection: close\r\n"...), "\r\n"...)
}

// respondHead renders the response header of an event stream: the status
// line and headers of h, the framing (chunked for HTTP/1.1; delimited by the
// connection's end for an HTTP/1.0 consumer, which cannot read chunks) and,
// unless keep, Connection: close; rendered into dst's array (fasthttp's
// AppendBytes starts at dst[:0]).
func respondHead(h *fasthttp.ResponseHeader, chunked, keep bool, dst []byte) []byte {
	h.SetConnectionClose()
	if keep {
		h.ResetConnectionClose()
	}
	if chunked {
		h.SetContentLength(-1)
	} else {
		h.SetContentLength(-2)
	}
	return h.AppendBytes(dst)
}

// run runs one stream on the hijacked connection: the watcher, the header
// (saying Connection: close when the connection cannot be kept), the
// events, the end. It reports whether the connection is kept for the
// consumer's next request (see serveConnection).
func (st hijackedStream) run() (kept bool) {
	r, w, head, ub := st.r, st.w, st.head, st.ub
	if tok, ok := processPoller.watch(w.conn, ub); ok {
		w.hangup, w.watched = tok, true
	} else {
		// The watching goroutine reads the connection: it would take the
		// consumer's next request, so the connection is not kept.
		if w.srv != nil {
			w.srv, head = nil, withClose(head)
		}
		go watchConsumer(w.conn, ub)
	}
	// The head goes out with the first flush, in the same write as the
	// first events when they came with the producer's head.
	w.head = head
	return r.pump(w, ub, st.resp, st.rep)
}

// consumerWriter writes a stream's answer to the consumer's connection:
// the head, then the body in HTTP/1.1 chunks when chunked. What is written
// between two flushes goes out as one chunk in one write, with the head
// when it has not gone yet and the body's end when it is the last. It
// holds a buffer only between a write and the flush that follows (a pooled
// one), so an idle stream holds none. It is used by one goroutine.
type consumerWriter struct {
	conn     net.Conn
	chunked  bool
	timeout  time.Duration
	deadline time.Time // the write deadline set last

	// head is the answer's status line and headers until they are written,
	// by the first flush (or write); the caller leaves it unchanged.
	head []byte
	// holdHead makes the first flush with only the head pending write
	// nothing: the producer's first events are buffered already (they came
	// with its head) and the head goes out with them.
	holdHead bool

	buf *[]byte // pending output after chunkRoom bytes of room; nil when none
	err error

	// span is what WriteBorrowed took without a copy: frames lying end to
	// end in the caller's buffer, written from there by the next flush.
	// Set only while buf is nil.
	span []byte

	hangup  int32 // the registration with processPoller, when watched
	watched bool

	// holds keeps the stream on the goroutine that runs it to its end, not
	// parked: the goroutine is the server's hijack handler, on a server
	// that may close the connection when it returns.
	holds bool

	// out writes to conn: a socketConn (raw system calls) for TCP, else
	// conn itself (newConsumerWriter). vec is out when it is a socketConn:
	// it writes the head and a chunk from where their bytes lie in one
	// system call (writeVec); nil otherwise.
	out io.Writer
	vec *socketConn

	// A chunk written from where its bytes lie: its size line, and its CRLF
	// followed by the body's last chunk (a chunk's tail is end[:2], the
	// last one's all of end).
	sizeLine [16]byte
	end      [len("\r\n0\r\n\r\n")]byte

	// srv, when set, takes the connection back after a stream that ended
	// well (keep-alive, see respond), unless shutdown is closed by then.
	srv      *fasthttp.Server
	shutdown <-chan struct{}
}

const (
	// chunkRoom is kept free before the pending bytes for the chunk's
	// size line: up to 8 hex digits and CRLF.
	chunkRoom = 10
	// maxPending is the most a writer buffers before it writes out
	// without waiting for a flush.
	maxPending = 32 << 10
)

var pendingPool = sync.Pool{New: func() any {
	b := make([]byte, chunkRoom, chunkRoom+maxPending+len("\r\n0\r\n\r\n"))
	return &b
}}

// Write buffers p for the next flush.
func (w *consumerWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.span != nil {
		w.adopt()
	}
	if w.buf != nil && len(*w.buf)-chunkRoom+len(p) > maxPending {
		if err := w.Flush(); err != nil {
			return 0, err
		}
	}
	if len(p) > maxPending {
		// A large event goes out as its own chunk, from where it is.
		if err := w.write(p, false); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if w.buf == nil {
		w.buf = pendingPool.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
}

// WriteBorrowed is Write for bytes the caller leaves unchanged until the
// next flush (the scanner's buffer: Pump flushes before its bytes move). Frames that lie end to end there, as a burst of
// frames passed through does, go out from where they are in one chunk,
// with no copy into the pending buffer.
func (w *consumerWriter) WriteBorrowed(p []byte) error {
	n := len(w.span)
	switch {
	case w.err != nil:
		return w.err
	case w.buf != nil || len(p) == 0 || len(p) > maxPending || w.vec == nil:
		// Copied: behind copied bytes, too large to hold, or on a
		// connection that cannot write a chunk from two places at once.
	case n == 0:
		w.span = p
		return nil
	case n+len(p) <= cap(w.span) && &w.span[:n+1][n] == &p[0]:
		if n+len(p) > maxPending {
			if err := w.Flush(); err != nil {
				return err
			}
			w.span = p
			return nil
		}
		w.span = w.span[:n+len(p)]
		return nil
	}
	_, err := w.Write(p)
	return err
}

// adopt copies the span into the pending buffer, for bytes that must
// follow it there.
func (w *consumerWriter) adopt() {
	w.buf = pendingPool.Get().(*[]byte)
	*w.buf = append(*w.buf, w.span...)
	w.span = nil
}

// Flush writes what is pending, as one chunk (see holdHead).
func (w *consumerWriter) Flush() error {
	if w.holdHead {
		w.holdHead = false
		if w.head != nil && w.buf == nil && w.span == nil && w.err == nil {
			return nil
		}
	}
	return w.flush(false)
}

// End writes what is pending and the end of the body (the last chunk),
// unless writing failed before.
func (w *consumerWriter) End() error {
	return w.flush(true)
}

// handBack ends the stream's hold on the connection for the server to
// serve the consumer's next request on it, and reports whether it did;
// when it cannot (no server for it, a shutdown, the watch or the deadlines
// cannot be undone) it closes the connection instead. Call it only once
// the whole answer is written.
func (w *consumerWriter) handBack() bool {
	w.release()
	select {
	case <-w.shutdown:
		w.srv = nil
	default:
	}
	if w.srv == nil || !w.watched || w.err != nil {
		w.Close() //nolint:errcheck // nothing more to send
		return false
	}
	w.watched = false
	processPoller.unwatch(w.conn, w.hangup)
	if w.conn.SetDeadline(time.Time{}) != nil {
		w.conn.Close() //nolint:errcheck
		return false
	}
	if sc, ok := w.conn.(*socketConn); ok {
		sc.reqHead.arm() // nothing was sent after the request (sentMore): a head comes next
	}
	return true
}

// Close closes the connection, which ends the watcher too (or ends its
// registration with the shared one).
func (w *consumerWriter) Close() error {
	w.release()
	if w.watched {
		w.watched = false
		processPoller.unwatch(w.conn, w.hangup)
	}
	return w.conn.Close()
}

func (w *consumerWriter) flush(last bool) error {
	if w.err != nil {
		w.release()
		return w.err
	}
	if w.span != nil {
		span := w.span
		w.span = nil
		return w.write(span, last)
	}
	if w.buf == nil {
		switch {
		case last && w.chunked:
			return w.emit(w.end[2:], nil, nil) // the last chunk alone
		case w.head != nil:
			return w.emit(nil, nil, nil)
		}
		return nil
	}
	b := *w.buf
	out := b[chunkRoom:]
	if w.chunked {
		start := chunkRoom
		if n := len(b) - chunkRoom; n > 0 {
			var size [16]byte
			line := append(strconv.AppendUint(size[:0], uint64(n), 16), '\r', '\n')
			start -= len(line)
			copy(b[start:], line)
			b = append(b, '\r', '\n')
		}
		if last {
			b = append(b, "0\r\n\r\n"...)
		}
		out = b[start:]
	}
	err := w.emit(out, nil, nil)
	*w.buf = b[:chunkRoom]
	w.release()
	return err
}

func (w *consumerWriter) release() {
	w.span = nil
	if w.buf != nil {
		*w.buf = (*w.buf)[:chunkRoom]
		pendingPool.Put(w.buf)
		w.buf = nil
	}
}

// write writes p as one chunk of its own (nothing else is pending but the
// head), followed by the body's end when last.
func (w *consumerWriter) write(p []byte, last bool) error {
	if !w.chunked {
		return w.emit(p, nil, nil)
	}
	line := append(strconv.AppendUint(w.sizeLine[:0], uint64(len(p)), 16), '\r', '\n')
	tail := w.end[:2]
	if last {
		tail = w.end[:]
	}
	return w.emit(line, p, tail)
}

// emit writes the head when it is still to go, then a, b and c, within the
// write deadline: in one system call on a socketConn.
func (w *consumerWriter) emit(a, b, c []byte) error {
	if err := w.arm(); err != nil {
		return err
	}
	head := w.head
	w.head = nil
	if w.vec != nil {
		_, err := w.vec.writeVec(head, a, b, c)
		return w.fail(err)
	}
	for _, p := range [...][]byte{head, a, b, c} {
		if len(p) == 0 {
			continue
		}
		if _, err := w.out.Write(p); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// newConsumerWriter returns the writer of a stream's answer to conn.
func newConsumerWriter(conn net.Conn, chunked bool, timeout time.Duration) *consumerWriter {
	w := &consumerWriter{conn: conn, out: newSocketConn(conn), chunked: chunked, timeout: timeout}
	copy(w.end[:], "\r\n0\r\n\r\n")
	w.vec, _ = w.out.(*socketConn)
	return w
}

// arm moves the write deadline to timeout from now, when it is less than
// seven eighths of that away: a consumer that reads nothing for about the
// timeout is given up, at the cost of a timer update every timeout/8 rather
// than on every write.
func (w *consumerWriter) arm() error {
	now := time.Now()
	if w.deadline.Sub(now) > w.timeout-w.timeout/8 {
		return nil
	}
	w.deadline = now.Add(w.timeout)
	return w.fail(w.conn.SetWriteDeadline(w.deadline))
}

func (w *consumerWriter) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// AwaitRuns waits until active (Relay.Active or Router.Active) reports no
// run in flight, or ctx ends (then it returns ctx's error). The server's
// Shutdown does not wait for event streams, which are answered on hijacked
// connections: call it once Shutdown has returned, so that every run has
// either ended or been tracked.
func AwaitRuns(ctx context.Context, active func() int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for active() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
