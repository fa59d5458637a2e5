package relay

import (
	"context"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// An event stream is written on the consumer's connection itself, taken
// from the server (a hijack, or a hand-over in place: carrier.go), with no
// pipe to a server goroutine between.

// respond renders the response header from ctx.Response and runs the stream
// on the goroutine carry gives it; resp and ub belong to the stream
// from here. A persistent connection (HTTP/1.1, no Connection: close)
// serves the consumer's next request after the stream.
func (r *Relay) respond(ctx *fasthttp.RequestCtx, ub *upstreamBody, resp *fasthttp.Response, rep *RunReport) {
	chunked := ctx.Request.Header.IsHTTP11()
	srv := r.srv.Load()
	keep := chunked && srv != nil && !ctx.Request.Header.ConnectionClose()
	// sc (nil unless the relay's Listener made it) lends one buffer to the
	// headers of its runs, which come one after the other.
	sc, _ := ctx.Conn().(*socketConn)
	var dst []byte
	if sc != nil {
		dst = sc.header[:0]
	}
	header := responseHeader(&ctx.Response.Header, chunked, keep, dst)
	if sc != nil {
		sc.header = header
	}
	timeout := r.ConsumerStallTimeout
	if timeout == 0 {
		timeout = DefaultConsumerStallTimeout
	}
	p := &relayedStream{r: r, ub: ub, resp: resp, rep: rep}
	r.carry(ctx, sc, p, writerConfig{header: header, chunked: chunked, keep: keep, timeout: timeout, srv: srv, done: ctx.Done()})
}

// writerConfig is how a stream's consumerWriter is made once carry gave
// the stream its connection (handOver, hijack). A value: the stream does
// not keep it.
type writerConfig struct {
	header        []byte
	chunked, keep bool
	timeout       time.Duration
	srv           *fasthttp.Server
	done          <-chan struct{}
}

// newWriter makes the writer of the response to conn, its header set.
func (wc writerConfig) newWriter(conn net.Conn) *consumerWriter {
	w := newConsumerWriter(conn, wc.chunked, wc.timeout)
	w.SetHeader(wc.header)
	if wc.keep {
		w.srv, w.shutdown = wc.srv, wc.done
	}
	return w
}

// handOver hands p to the goroutine that serves sc, when one waits for it
// (nextStream), and reports whether it did: no hijack, no goroutine
// started.
func (p *relayedStream) handOver(ctx *fasthttp.RequestCtx, sc *socketConn, wc writerConfig) bool {
	if !sc.handover.Take() {
		return false
	}
	p.cw = wc.newWriter(sc)
	sc.handover.Give(p) // taken once the server returns (nextStream)
	sc.idleRead = false
	sc.inPlace.Store(true)
	ctx.Response.Reset() // dropped (socketConn.inPlace): the least to render
	return true
}

// hijack runs p on the goroutine the server starts for the hijacked
// connection; sc is nil unless the relay's Listener made it.
func (p *relayedStream) hijack(ctx *fasthttp.RequestCtx, sc *socketConn, wc writerConfig) {
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		pipelined := wc.keep && sentMore(c, sc)
		// Not the server's buffered reader: it would be held for the
		// stream's life.
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			c = u.UnsafeConn()
		}
		w := wc.newWriter(c)
		if pipelined {
			w.closeAfter()
		}
		w.onHijackHandler = wc.srv == nil
		p.cw = w
		if wc.srv == nil {
			// Without KeepHijackedConns the server closes the connection
			// once this returns.
			p.run()
			return
		}
		go p.run()
	})
}

// sentMore reports whether the server's reader buffered bytes after the
// request (a pipelined request): they go with the reader, so the
// connection cannot serve another request. noWait or a past deadline keeps
// the read from the kernel.
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

// withClose adds Connection: close to a header rendered for keep-alive, as
// the last line fasthttp writes. Rare, so not rendered up front.
func withClose(header []byte) []byte {
	end := len(header) - len("\r\n")
	return append(append(header[:end:end], "Connection: close\r\n"...), "\r\n"...)
}

// responseHeader renders h for an event stream into dst's array: chunked
// for HTTP/1.1, else delimited by the connection's end (HTTP/1.0 cannot read
// chunks), and Connection: close unless keep.
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

// consumerWriter writes a stream's response to the consumer's connection,
// with its hangup watch and its hand-back to the server. It is used by one
// goroutine.
type consumerWriter struct {
	wire.ChunkWriter
	conn net.Conn

	watcher *wire.Poller
	hangup  int32 // the registration with watcher, when watched
	watched bool

	// onHijackHandler: the stream must not park, since the server may close
	// the connection once its hijack handler returns.
	onHijackHandler bool

	// srv, when set, takes the connection back after a stream that ended
	// well, unless shutdown is closed by then.
	srv      *fasthttp.Server
	shutdown <-chan struct{}
}

func newConsumerWriter(conn net.Conn, chunked bool, timeout time.Duration) *consumerWriter {
	w := &consumerWriter{conn: conn}
	w.Init(newSocketConn(conn), chunked, timeout)
	return w
}

// handBack gives the connection back for the consumer's next request and
// reports whether it did; else it closes it. Call it only once the whole
// response is written.
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
		sc.reqHeader.arm() // nothing followed the request (sentMore): a header comes next
	}
	return true
}

// closeAfter has the connection closed after the response, which has not
// started: Connection: close in its header, no hand-back.
func (w *consumerWriter) closeAfter() {
	if w.srv != nil {
		w.srv = nil
		w.SetHeader(withClose(w.Header()))
	}
}

func (w *consumerWriter) Close() error {
	w.Release()
	if w.watched {
		w.watched = false
		unwatchHangup(w.watcher, w.conn, w.hangup)
	}
	return w.conn.Close()
}

// AwaitRuns waits until active (Relay.Active or Router.Active) reports no
// run in flight, or returns ctx's error. The server's Shutdown does not wait
// for event streams, on hijacked connections: call it once Shutdown has
// returned, so that every run has ended or been tracked.
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
