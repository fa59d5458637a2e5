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
	// ConnectTimeout bounds a connect to the producer (default 10s).
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds sending the request and waiting for the first
	// byte of the response (default 5m: an agent may think first).
	FirstByteTimeout time.Duration
	// MaxConns caps the connections to the producer, and so the runs in flight
	// (default 4096); a run over it fails at once with 503.
	MaxConns int
	// MaxIdleConnDuration closes pooled connections idle this long (default
	// 4s: below the 5s keep-alive of common Python and Node servers).
	MaxIdleConnDuration time.Duration
	// Log receives a WARN line (never the bytes) for each connection
	// discarded as OnUnsolicited describes; nil discards.
	Log *zap.Logger
	// OnUnsolicited, when set, is called for each connection to the
	// producer discarded because it sent bytes outside any response (Go's
	// Transport logs an "unsolicited response"); addr is its host:port, n
	// the bytes found (up to 64 KiB counted). Called on the request's
	// goroutine: it must be quick.
	OnUnsolicited func(addr string, n int)
	// NoReuse sends each request on a new connection with Connection:
	// close, as Go's Transport with DisableKeepAlives: bytes the producer
	// sends after the reuse check cannot be told from the next response.
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
// streamed, with no read deadline past the first byte (the relay keeps its
// own timers).
func NewClient(o ClientOptions) *fasthttp.Client {
	connect := orDefault(o.ConnectTimeout, 10*time.Second)
	firstByte := orDefault(o.FirstByteTimeout, 5*time.Minute)
	maxConns := o.MaxConns
	if maxConns <= 0 {
		maxConns = 4096
	}
	d := &dialer{net: net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}, log: o.Log, onUnsolicited: o.OnUnsolicited}
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

type dialer struct {
	net           net.Dialer
	log           *zap.Logger
	onUnsolicited func(addr string, n int)
}

func (d *dialer) dial(addr string) (net.Conn, error) {
	c, err := d.net.Dial("tcp", addr)
	if err != nil {
		return nil, &dialError{err}
	}
	return &firstByteConn{Conn: newSocketConn(c), d: d, addr: addr}, nil
}

// reportUnsolicited reports a discarded connection (ClientOptions.OnUnsolicited).
func (d *dialer) reportUnsolicited(addr string, n int, when string) {
	d.log.Warn("discarded a connection to the producer: it sent bytes outside any response",
		zap.String("producer", addr), zap.Int("bytes", n), zap.String("found", when))
	if d.onUnsolicited != nil {
		d.onUnsolicited(addr, n)
	}
}

// dialError marks a failure to reach the producer at all (502, or 504 for a
// connect timeout), as opposed to a failure after it was reached.
type dialError struct{ err error }

func (e *dialError) Error() string { return "dialing the producer: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// firstByteConn turns the client's per-request read deadline, which would
// cap the whole streamed run, into a first-byte timeout: it is cleared at
// the response's first byte. The client sets it from the goroutine that
// then reads, so armed needs no lock.
type firstByteConn struct {
	net.Conn
	armed  bool
	served bool // read since last found reusable: check before the next request
	// ret gives the connection back after each response (connReturn); set
	// by the goroutine that has the connection.
	ret  any
	d    *dialer
	addr string // the producer's host:port
}

// errUnsolicitedBytes refuses a request's write on a connection that is not
// reusable; the client retries it on another when it may.
var errUnsolicitedBytes = errors.New("the producer's connection held bytes outside any response")

// reusable reports whether a pooled connection may carry the next request:
// a readable byte on it would be read as the next response, and every later
// consumer would read another's. Called before a write, by the goroutine
// that has the connection.
func (c *firstByteConn) reusable() bool {
	if !c.served {
		return true
	}
	c.served = false
	sc, ok := c.Conn.(*socketConn)
	if !ok {
		return true // no descriptor to look at without waiting
	}
	n, err := sc.Unsolicited()
	if n > 0 {
		c.d.reportUnsolicited(c.addr, n, "idle")
	}
	return n == 0 && err == nil
}

// afterResponse reports n bytes after a complete response (wire.BodyOptions.Unsolicited).
func (c *firstByteConn) afterResponse(n int) { c.d.reportUnsolicited(c.addr, n, "after a response") }

func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	c.armed = !t.IsZero()
	return c.Conn.SetReadDeadline(t)
}

// Write refuses a connection that is not reusable: fasthttp's own transport
// does not ask, and retries an idempotent request after this error.
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

// upstreamBody is the producer's streamed response body for one run, with
// its timers. Any goroutine may cancel; the reading goroutine calls finish.
// mu orders them, so the response is released only once no cancel can
// touch it.
type upstreamBody struct {
	body fasthttp.ReadCloserWithError

	mu    sync.Mutex
	done  bool
	cause *abortError

	idle     time.Duration
	runEnd   time.Duration // the run's end, as time since started; 0: none
	graceEnd time.Duration // endWithin's end, as time since started; 0: none
	timer    *time.Timer
	started  time.Time
	touched  atomic.Int64 // when the stream last read, as time since started

	// slowWrite is set when the timer found a write to writer in flight,
	// cleared by the next touch.
	writer    *wire.ChunkWriter
	slowWrite atomic.Bool
}

func newUpstreamBody(body fasthttp.ReadCloserWithError) *upstreamBody {
	return &upstreamBody{body: body}
}

// Read is passThrough's; a stream reads body through producerBody.
func (u *upstreamBody) Read(p []byte) (int, error) { return u.body.Read(p) }

// cancel stops the stream for cause and closes the connection. The first
// cause wins; after finish it does nothing.
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

func (u *upstreamBody) why() *abortError {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cause
}

// startTimers arms one timer for the idle timeout and the run's remaining
// time; zero disables either, a negative remaining time ends the run now.
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
// producer ends it first (relayedStream.checkEnd).
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

// touch notes a read at now. The timer is not moved per read (a timer
// update per event): check re-arms it from the last touch.
func (u *upstreamBody) touch(now time.Time) {
	if u.idle > 0 {
		u.touched.Store(int64(now.Sub(u.started)))
		if u.slowWrite.Load() {
			u.slowWrite.Store(false)
		}
	}
}

// watchWrites has the idle timeout leave out time spent writing to w: the
// producer then waits behind the relay, it is not silent. Call it before
// the stream's first read.
func (u *upstreamBody) watchWrites(w *wire.ChunkWriter) {
	u.mu.Lock()
	u.writer = w
	u.mu.Unlock()
}

// touchAfterWrite reports whether the next read must touch.
func (u *upstreamBody) touchAfterWrite() bool { return u.slowWrite.Load() }

func (u *upstreamBody) writing() bool {
	if u.writer == nil || u.writer.WriteSeq()&1 == 0 {
		return false
	}
	u.slowWrite.Store(true)
	return true
}

// check runs when the timer fires: it cancels the stream or re-arms the
// timer, under mu so that finish leaves no timer armed.
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
		// Writing to the consumer: the producer is not silent.
		u.touched.Store(int64(elapsed))
		u.timer.Reset(u.untilEnd(elapsed))
	default:
		u.cancelLocked(errIdleTimeout)
	}
}

// finish stops the timers and closes the body. After it returns no other
// goroutine touches the body, so the response may be released.
func (u *upstreamBody) finish(err error) {
	u.mu.Lock()
	u.done = true
	u.mu.Unlock()
	if u.timer != nil {
		u.timer.Stop()
	}
	u.body.CloseWithError(err) //nolint:errcheck // nothing to do about it
}

// watchConsumer cancels the run when the consumer's connection ends: on a
// silent stream no write would find it. The fallback without a Poller; the
// stream's close of conn ends it.
func watchConsumer(conn net.Conn, u *upstreamBody) {
	var b [1]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			u.cancel(errConsumerGone)
			return
		}
	}
}

// abortError is why the relay ended a stream; Code is the RUN_ERROR code.
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
	// CodeConsumerGone and CodeConsumerStalled are only RunReport.Abort:
	// no RUN_ERROR can be written then.
	CodeConsumerGone    = "consumer_gone"
	CodeConsumerStalled = "consumer_stalled"
)

var (
	errConsumerGone    = &abortError{CodeConsumerGone, "the consumer went away"}
	errConsumerStalled = &abortError{CodeConsumerStalled, "the consumer read nothing for longer than the consumer stall timeout"}
	errIdleTimeout     = &abortError{CodeUpstreamIdleTimeout, "the producer sent nothing for longer than the idle timeout"}
	errRunTimeout      = &abortError{CodeRunTimeout, "the run took longer than the run timeout"}
	errShutdown        = &abortError{CodeShutdown, "the relay is shutting down"}
	// errRunEnded: the stream is complete, no RUN_ERROR is owed.
	errRunEnded = &abortError{"run_ended", "the requested run ended and the producer kept the stream open"}
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &ne) && ne.Timeout())
}
