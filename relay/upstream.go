package relay

import (
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/internal/wire"
	"go.uber.org/zap"
)

// Doer sends a request to the producer. The relay needs the response body
// streamed: resp.BodyStream() must be the fasthttp.ReadCloserWithError of a
// client with StreamResponseBody set, as NewClient makes.
type Doer interface {
	Do(req *fasthttp.Request, resp *fasthttp.Response) error
}

// ClientOptions configures NewClient. Every zero value means the documented
// default; a negative duration disables that timeout.
type ClientOptions struct {
	// ConnectTimeout bounds opening a connection to the producer
	// (default 10s).
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds the wait, after the request is sent, for the
	// first byte of the producer's response (default 5m: an agent may think
	// before it answers). It also bounds sending the request.
	FirstByteTimeout time.Duration
	// MaxConns caps the connections to the producer, that is the runs in
	// flight, since each run holds one for its whole length (default 4096).
	// A run over the cap fails at once with 503.
	MaxConns int
	// MaxIdleConnDuration closes pooled connections idle this long (default
	// 4s, below the 5s keep-alive of common Python and Node servers, so that
	// a run is never sent on a connection the producer is closing).
	MaxIdleConnDuration time.Duration
	// Log receives a WARN line for each connection to the producer the
	// client discards because the producer sent bytes outside any response
	// (see OnStray), with the producer's address and the byte count, never
	// the bytes; nil discards.
	Log *zap.Logger
	// OnStray, when set, is called once for each connection to the
	// producer discarded because the producer sent bytes outside any
	// response: after a response was complete (with its last bytes, or while
	// the connection sat idle in the pool, found before the connection is
	// reused). addr is the producer's host:port, n the bytes found (up to
	// 64 KiB are counted); the bytes themselves reach no consumer. It is
	// called on the goroutine of the request that found them and must be
	// quick (a counter). A connection the producer closed while idle is
	// discarded too, without a call: a keep-alive ending is no fault.
	OnStray func(addr string, n int)
	// NoReuse sends each request on a new connection, asking the producer
	// to close it after its response (Connection: close), as nginx does
	// without an upstream keepalive and Go's net/http Transport with
	// DisableKeepAlives (--upstream-reuse never). A pooled connection is
	// checked for bytes before its reuse, but bytes the producer sends
	// after that check, while the next request is written, cannot be told
	// from that request's response; a new connection carries none.
	NoReuse bool
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// NewClient returns the client the relay uses by default: response bodies
// streamed, no deadline on reading them (the relay keeps its own idle and
// total timers), the connect and first-byte timeouts of o.
func NewClient(o ClientOptions) *fasthttp.Client {
	connect := orDefault(o.ConnectTimeout, 10*time.Second)
	firstByte := orDefault(o.FirstByteTimeout, 5*time.Minute)
	maxConns := o.MaxConns
	if maxConns <= 0 {
		maxConns = 4096
	}
	d := &dialer{net: net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}, log: o.Log, onStray: o.OnStray}
	if d.log == nil {
		d.log = zap.NewNop()
	}
	return &fasthttp.Client{
		Dial:                     d.dial,
		Transport:                streamTransport{noReuse: o.NoReuse},
		StreamResponseBody:       true,
		ReadTimeout:              firstByte, // cleared at the first byte, see firstByteConn
		WriteTimeout:             firstByte,
		MaxConnsPerHost:          maxConns,
		MaxIdleConnDuration:      orDefault(o.MaxIdleConnDuration, 4*time.Second),
		ReadBufferSize:           4 << 10, // the producer's header must fit (as nginx's proxy_buffer_size); the body is read past it (streamTransport)
		WriteBufferSize:          16 << 10,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		// fasthttp's errors would quote the producer's response (malformed.go).
		ConfigureClient: func(hc *fasthttp.HostClient) error { hc.SecureErrorLogMessage = true; return nil },
	}
}

// dialer opens connections to the producer, wrapped so that the client's
// read deadline bounds only the wait for the first byte of each response,
// and so that a connection is checked for unsolicited bytes before it is
// reused (firstByteConn.reusable).
type dialer struct {
	net     net.Dialer
	log     *zap.Logger
	onStray func(addr string, n int)
}

func (d *dialer) dial(addr string) (net.Conn, error) {
	c, err := d.net.Dial("tcp", addr)
	if err != nil {
		return nil, &dialError{err}
	}
	return &firstByteConn{Conn: newSocketConn(c), d: d, addr: addr}, nil
}

// reportUnsolicited reports a connection to the producer at addr discarded
// for the n bytes it carried outside any response, found when
// (ClientOptions.OnStray).
func (d *dialer) reportUnsolicited(addr string, n int, when string) {
	d.log.Warn("discarded a connection to the producer: it sent bytes outside any answer",
		zap.String("producer", addr), zap.Int("bytes", n), zap.String("found", when))
	if d.onStray != nil {
		d.onStray(addr, n)
	}
}

// dialError marks a failure to reach the producer at all (502, or 504 for a
// connect timeout), as opposed to a failure after it was reached.
type dialError struct{ err error }

func (e *dialError) Error() string { return "dialing the producer: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// firstByteConn turns the fasthttp client's per-request read deadline, which
// would otherwise stay armed while the streamed body is read and cap the
// whole run, into a first-byte timeout: the deadline is cleared as soon as a
// byte of the response arrives. The client sets the deadline before reading
// each response, from the goroutine that then reads, so armed needs no lock.
//
// It also keeps a connection from carrying a request while it holds
// bytes of no response (reusable).
type firstByteConn struct {
	net.Conn
	armed bool
	// served: the connection has been read since it was last found reusable,
	// so it has carried a response and is to be checked before it carries
	// the next request.
	served bool
	// ret gives the connection back after each response (connReturn), made
	// at its first; set by the goroutine that holds the connection.
	ret  any
	d    *dialer
	addr string // the producer's host:port
}

// errUnsolicitedBytes is the write of a request on a connection that held bytes
// of no response (reusable): it is closed and the request, not sent, is retried
// on another by the client when it may be.
var errUnsolicitedBytes = errors.New("the producer's connection held bytes outside any answer")

// reusable reports whether a pooled connection may carry the next request:
// nothing is owed on it, so any readable byte (a response nobody asked for)
// would be read as the next request's response, and every later consumer
// would read another's. Such a connection is reported and closed, as is one
// the producer closed. The check is one read that finds nothing, once per
// reuse. Called before a write, by the goroutine that has the connection.
func (c *firstByteConn) reusable() bool {
	if !c.served {
		return true
	}
	c.served = false
	sc, ok := c.Conn.(*socketConn)
	if !ok {
		return true // no descriptor to look at without waiting
	}
	n, err := sc.Stray()
	if n > 0 {
		c.d.reportUnsolicited(c.addr, n, "idle")
	}
	return n == 0 && err == nil
}

// afterResponse reports the n bytes that followed a complete response on the
// connection (wire.BodyOptions.Stray).
func (c *firstByteConn) afterResponse(n int) { c.d.reportUnsolicited(c.addr, n, "after an answer") }

func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	c.armed = !t.IsZero()
	return c.Conn.SetReadDeadline(t)
}

// Write writes, unless the connection is not fit to carry a request
// (reusable): streamTransport asks before it writes, fasthttp's own transport
// (a response asked not to be streamed, or skipped) does not, and retries
// an idempotent request on another connection after this error.
func (c *firstByteConn) Write(p []byte) (int, error) {
	if c.served && !c.reusable() {
		return 0, errUnsolicitedBytes
	}
	return c.Conn.Write(p)
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	c.served = true
	n, err := c.Conn.Read(p)
	if n > 0 && c.armed {
		c.armed = false
		if derr := c.Conn.SetReadDeadline(time.Time{}); err == nil {
			err = derr
		}
	}
	return n, err
}

// upstreamBody is the producer's streamed response body for one run (a
// wire.Body, or fasthttp's), with the one way to stop it early from any
// goroutine, cancel, and the run's timers. The hangup watch, the timers and
// a shutdown cancel; the reading goroutine calls finish. A mutex orders
// them, so the response is released only once no cancel can touch it.
type upstreamBody struct {
	body fasthttp.ReadCloserWithError

	mu    sync.Mutex
	done  bool
	cause *abortError

	idle     time.Duration
	runEnd   time.Duration // the run's end, as time since started; 0: none
	graceEnd time.Duration // the end of the grace after the requested run's end (endWithin), as time since started; 0: none
	timer    *time.Timer   // fires at the nearer of the idle and run ends
	started  time.Time     // for touched and runEnd: its monotonic reading
	touched  atomic.Int64  // when the stream last read, as time since started

	// writer is the consumer's (watchWrites): while the stream writes to
	// it, the relay is not reading the producer, and the producer's silence
	// is not counted. slowWrite is set when the timer found a write in
	// flight, and cleared by the touch that follows it.
	writer    *wire.ChunkWriter
	slowWrite atomic.Bool
}

func newUpstreamBody(body fasthttp.ReadCloserWithError) *upstreamBody {
	return &upstreamBody{body: body}
}

// Read reads the body (passThrough's; a stream reads body itself,
// producerBody.Read).
func (u *upstreamBody) Read(p []byte) (int, error) { return u.body.Read(p) }

// cancel stops the stream for cause: a read in flight returns an error and
// the connection is closed, not reused. The first cause wins; after finish
// cancel does nothing.
func (u *upstreamBody) cancel(cause *abortError) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cancelLocked(cause)
}

func (u *upstreamBody) cancelLocked(cause *abortError) {
	if u.done || u.cause != nil {
		return
	}
	u.cause = cause
	u.body.CloseWithError(cause) //nolint:errcheck // the stream is abandoned
}

// why returns the cause the stream was cancelled for, nil when it was not.
func (u *upstreamBody) why() *abortError {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cause
}

// startTimers arms the one timer, not two, for the idle timeout (touch) and
// the run's remaining time; zero disables either, a negative remaining
// time ends the run at once.
func (u *upstreamBody) startTimers(idle, remaining time.Duration) {
	if idle <= 0 && remaining == 0 {
		return
	}
	u.idle = idle
	u.started = time.Now()
	if remaining != 0 {
		u.runEnd = max(remaining, 1) // 1 ns: already over
	}
	u.timer = time.AfterFunc(time.Duration(math.MaxInt64), u.check)
	u.timer.Reset(u.untilEnd(0)) // armed once the field is set: check reads it
}

// untilEnd returns how long after elapsed (time since started) the nearer
// of the idle end, counted from the last touch, and the run's end is.
func (u *upstreamBody) untilEnd(elapsed time.Duration) time.Duration {
	wait := time.Duration(math.MaxInt64)
	if u.idle > 0 {
		wait = u.idle - (elapsed - time.Duration(u.touched.Load()))
	}
	if u.runEnd > 0 {
		wait = min(wait, u.runEnd-elapsed)
	}
	if u.graceEnd > 0 {
		wait = min(wait, u.graceEnd-elapsed)
	}
	return wait
}

// endWithin ends the stream with errRunEnded grace from now unless the
// producer ends it first: the run the input asked for has ended, and it is
// the exchange's last (see relayedStream.checkEnd).
func (u *upstreamBody) endWithin(grace time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done || u.cause != nil {
		return
	}
	if u.timer == nil {
		u.started = time.Now()
		u.timer = time.AfterFunc(time.Duration(math.MaxInt64), u.check)
	}
	elapsed := time.Since(u.started)
	u.graceEnd = max(elapsed+grace, 1)
	u.timer.Reset(u.untilEnd(elapsed))
}

// touch notes a read at now. The idle timer is not moved on every read (a
// timer update per event): check re-arms it from the last touch.
func (u *upstreamBody) touch(now time.Time) {
	if u.idle > 0 {
		u.touched.Store(int64(now.Sub(u.started)))
		if u.slowWrite.Load() {
			u.slowWrite.Store(false)
		}
	}
}

// watchWrites has the idle timeout leave out the time spent writing to the
// consumer (w), which a slow consumer stretches up to
// ConsumerStallTimeout: the producer then waits behind the relay, it is
// not silent. Call it before the stream's first read.
func (u *upstreamBody) watchWrites(w *wire.ChunkWriter) {
	u.mu.Lock()
	u.writer = w
	u.mu.Unlock()
}

// touchAfterWrite reports whether the timer found a write to the consumer
// in flight since the last touch: the next read must touch.
func (u *upstreamBody) touchAfterWrite() bool { return u.slowWrite.Load() }

// writing reports whether a write to the consumer is in flight, and if so
// has the next read touch (touchAfterWrite).
func (u *upstreamBody) writing() bool {
	if u.writer == nil || u.writer.WriteSeq()&1 == 0 {
		return false
	}
	u.slowWrite.Store(true)
	return true
}

// check runs when the timer fires: it cancels the stream when its run is
// over or the producer was silent for the idle timeout, else re-arms the
// timer. Under the mutex, so that finish leaves no timer armed.
func (u *upstreamBody) check() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return
	}
	elapsed := time.Since(u.started)
	if wait := u.untilEnd(elapsed); wait > 0 {
		u.timer.Reset(wait)
		return
	}
	switch {
	case u.graceEnd > 0 && elapsed >= u.graceEnd:
		u.cancelLocked(errRunEnded)
	case u.runEnd > 0 && elapsed >= u.runEnd:
		u.cancelLocked(errRunTimeout)
	case u.writing():
		// Busy with the consumer: the producer's silence counts from now
		// at the earliest (the stream's next read touches again).
		u.touched.Store(int64(elapsed))
		u.timer.Reset(u.untilEnd(elapsed))
	default:
		u.cancelLocked(errIdleTimeout)
	}
}

// finish ends the stream for good: timers stopped, the body closed (a
// connection read to the end goes back to the pool, any other is closed).
// After finish returns no other goroutine touches the body, so the response
// may be released.
func (u *upstreamBody) finish(err error) {
	u.mu.Lock()
	u.done = true
	u.mu.Unlock()
	if u.timer != nil {
		u.timer.Stop()
	}
	u.body.CloseWithError(err) //nolint:errcheck // nothing to do about it
}

// finished reports whether finish was called.
func (u *upstreamBody) finished() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.done
}

// watchConsumer reads the consumer's connection until it ends, then
// cancels the run: else a consumer that left is found only at a write,
// which on a silent stream may never come. It is the fallback when the
// Poller cannot watch the connection; nothing else reads the connection
// then, and the stream closes it at its end, which ends the goroutine.
func watchConsumer(conn net.Conn, u *upstreamBody) {
	var b [1]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			u.cancel(errConsumerGone)
			return
		}
	}
}

// abortError is why the relay ended a stream before the producer did. Code
// is the RUN_ERROR code the consumer reads.
type abortError struct {
	Code, Cause string
}

func (e *abortError) Error() string { return e.Cause }

// The RUN_ERROR codes the relay writes itself.
const (
	CodeUpstreamBroken      = "upstream_broken"
	CodeUpstreamIdleTimeout = "upstream_idle_timeout"
	CodeRunTimeout          = "run_timeout"
	CodeFrameTooLarge       = "frame_too_large"
	CodeShutdown            = "relay_shutdown"
	// CodeConsumerGone is RunReport.Abort when the consumer went away; no
	// RUN_ERROR is written then.
	CodeConsumerGone = "consumer_gone"
	// CodeConsumerStalled is RunReport.Abort when the consumer took none
	// of the response for Relay.ConsumerStallTimeout and the relay cut it; no
	// RUN_ERROR is written then (it could not be).
	CodeConsumerStalled = "consumer_stalled"
)

var (
	errConsumerGone    = &abortError{CodeConsumerGone, "the consumer went away"}
	errConsumerStalled = &abortError{CodeConsumerStalled, "the consumer read nothing for longer than the consumer stall timeout"}
	errIdleTimeout     = &abortError{CodeUpstreamIdleTimeout, "the producer sent nothing for longer than the idle timeout"}
	errRunTimeout      = &abortError{CodeRunTimeout, "the run took longer than the run timeout"}
	errShutdown        = &abortError{CodeShutdown, "the relay is shutting down"}
	// errRunEnded ends a stream the producer keeps open after the run the
	// input asked for ended: the stream is complete, no RUN_ERROR is owed.
	errRunEnded = &abortError{"run_ended", "the requested run ended and the producer kept the stream open"}
)

// isTimeout reports whether err is a timeout of the network or of fasthttp.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &ne) && ne.Timeout())
}
