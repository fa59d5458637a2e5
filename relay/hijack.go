package relay

import (
	"context"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// An event stream is written on the consumer's connection itself, taken
// from the server once the run's handler returns (a hijack, or a hand-over
// in place: carrier.go): the header and the chunked body go to the socket
// with no pipe to a server goroutine between.
//
// What the server no longer does for such a connection, the relay does: it
// renders the header (responseHeader), bounds a write that makes no
// progress by ConsumerStallTimeout (consumer_stalled; a slow but steady
// reader is not cut), closes the connection or hands it back (handBack),
// and keeps its own registry of runs in flight (track, Active, EndRuns),
// which the server's Shutdown does not count: call AwaitRuns after it.

// respond writes the run's event stream to the consumer: the header from
// ctx.Response now, then the stream (run) on the goroutine the carrier
// gives it. resp and ub belong to the stream from here.
//
// When the connection may persist (HTTP/1.1, no Connection: close, nothing
// sent after the request), the stream ends with the chunked body's end and
// the connection serves the consumer's next request; otherwise the
// response says Connection: close and the stream closes the connection.
func (r *Relay) respond(ctx *fasthttp.RequestCtx, ub *upstreamBody, resp *fasthttp.Response, rep *RunReport) {
	chunked := ctx.Request.Header.IsHTTP11()
	srv := r.srv.Load()
	keep := chunked && srv != nil && !ctx.Request.Header.ConnectionClose()
	// sc (nil unless the relay's Listener served the connection) lends one
	// buffer to the headers of its runs, which come one after the other.
	sc, _ := ctx.Conn().(*socketConn)
	var dst []byte
	if sc != nil {
		dst = sc.header[:0]
	}
	head := responseHeader(&ctx.Response.Header, chunked, keep, dst)
	if sc != nil {
		sc.header = head
	}
	timeout := r.ConsumerStallTimeout
	if timeout == 0 {
		timeout = DefaultConsumerStallTimeout
	}
	st := streamResponse{r: r, header: head, ub: ub, resp: resp, rep: rep, chunked: chunked, keep: keep, timeout: timeout, srv: srv, done: ctx.Done()}
	r.carrier().carry(ctx, sc, st)
}

// streamResponse is the consumer's event-stream response as respond made
// it, before it runs (run): its header, the producer's response it
// relays, how it is written (chunked, timeout) and whether its connection
// may be kept, with the server (srv) and the shutdown signal (done) for
// that. Its writer (w) is made once the carrier gave it the connection
// (handOver, hijack).
type streamResponse struct {
	r      *Relay
	w      *consumerWriter
	header []byte
	ub     *upstreamBody
	resp   *fasthttp.Response
	rep    *RunReport

	chunked, keep bool
	timeout       time.Duration
	srv           *fasthttp.Server
	done          <-chan struct{}
}

// handOver hands the stream to the goroutine that serves sc, when one
// waits for it (nextStream), and reports whether it did: no hijack and no
// goroutine started; the server's response is dropped and its loop ends
// (socketConn.inPlace).
func (st streamResponse) handOver(ctx *fasthttp.RequestCtx, sc *socketConn) bool {
	if !sc.handover.Take() {
		return false
	}
	st.w = newConsumerWriter(sc, st.chunked, st.timeout)
	if st.keep {
		st.w.srv, st.w.shutdown = st.srv, st.done
	}
	sc.handover.Give(st) // taken once the server returns (nextStream)
	sc.idleRead = false
	sc.inPlace.Store(true)
	ctx.Response.Reset() // what the server writes is dropped: the least to render
	return true
}

// hijack takes the connection from the server once the handler returns
// and runs the stream on the goroutine the server starts for that; sc is
// ctx's connection when the relay's Listener served it (else nil).
func (st streamResponse) hijack(ctx *fasthttp.RequestCtx, sc *socketConn) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		// A copy, changed here: st itself, captured and changed, would be
		// moved to the heap on every run, the in-place ones too.
		st := st
		if st.keep && sentMore(c, sc) {
			st.keep, st.header = false, withClose(st.header)
		}
		// Leave the server's buffered reader behind, to the garbage
		// collector, rather than hold it for the stream's life.
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			c = u.UnsafeConn()
		}
		w := newConsumerWriter(c, st.chunked, st.timeout)
		w.onHijackHandler = st.srv == nil
		if st.keep {
			w.srv, w.shutdown = st.srv, st.done
		}
		st.w = w
		if st.srv == nil {
			// A server not made by Server may close the connection once
			// this handler returns (KeepHijackedConns unset): the stream
			// runs here to its end, and the connection is not reused.
			st.run()
			return
		}
		go st.run()
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

// withClose returns a header rendered for keep-alive as responseHeader renders
// it without: Connection: close is the last header line fasthttp writes.
// Rare (a pipelined request, no epoll watcher), so not rendered up front.
func withClose(head []byte) []byte {
	end := len(head) - len("\r\n")
	return append(append(head[:end:end], "Connection: close\r\n"...), "\r\n"...)
}

// responseHeader renders the response header of an event stream: the status
// line and headers of h, the framing (chunked for HTTP/1.1; delimited by the
// connection's end for an HTTP/1.0 consumer, which cannot read chunks) and,
// unless keep, Connection: close; rendered into dst's array (fasthttp's
// AppendBytes starts at dst[:0]).
func responseHeader(h *fasthttp.ResponseHeader, chunked, keep bool, dst []byte) []byte {
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

// consumerWriter writes a stream's response to the consumer's connection
// (wire.ChunkWriter) with the connection's hangup watch and its hand-back
// to the server. It is used by one goroutine.
type consumerWriter struct {
	// The response is written (ChunkWriter.Conn) to a socketConn over conn
	// for TCP (raw system calls, a chunk written from where its bytes lie
	// in one writev), else to conn itself.
	wire.ChunkWriter
	conn net.Conn

	watcher *wire.Poller // the Relay's Poller, when it watches conn
	hangup  int32        // the registration with watcher, when watched
	watched bool

	// onHijackHandler: the stream runs to its end on the server's hijack
	// handler, which must not return before (the server may close the
	// connection then), so it does not park.
	onHijackHandler bool

	// srv, when set, takes the connection back after a stream that ended
	// well (keep-alive, see respond), unless shutdown is closed by then.
	srv      *fasthttp.Server
	shutdown <-chan struct{}
}

// newConsumerWriter returns the writer of a stream's response to conn.
func newConsumerWriter(conn net.Conn, chunked bool, timeout time.Duration) *consumerWriter {
	w := &consumerWriter{conn: conn}
	w.Init(newSocketConn(conn), chunked, timeout)
	return w
}

// handBack ends the stream's hold on the connection for the server to
// serve the consumer's next request on it, and reports whether it did;
// when it cannot (no server for it, a shutdown, the watch or the deadlines
// cannot be undone) it closes the connection instead. Call it only once
// the whole response is written.
func (w *consumerWriter) handBack() bool {
	w.Release()
	select {
	case <-w.shutdown:
		w.srv = nil
	default:
	}
	if w.srv == nil || !w.watched || w.Err() != nil {
		w.Close() //nolint:errcheck // nothing more to send
		return false
	}
	w.watched = false
	unwatchHangup(w.watcher, w.conn, w.hangup)
	if w.conn.SetDeadline(time.Time{}) != nil {
		w.conn.Close() //nolint:errcheck
		return false
	}
	if sc, ok := w.conn.(*socketConn); ok {
		sc.reqHeader.arm() // nothing was sent after the request (sentMore): a header comes next
	}
	return true
}

// Close closes the connection, which ends the watcher too (or ends its
// registration with the shared one).
func (w *consumerWriter) Close() error {
	w.Release()
	if w.watched {
		w.watched = false
		unwatchHangup(w.watcher, w.conn, w.hangup)
	}
	return w.conn.Close()
}

// AwaitRuns waits until active (Relay.Active or Router.Active) reports no
// run in flight, or ctx ends (then it returns ctx's error). The server's
// Shutdown does not wait for event streams, which are responded to on hijacked
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
