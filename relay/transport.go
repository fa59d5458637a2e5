package relay

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"

	"github.com/valyala/fasthttp"
)

// streamTransport is the fasthttp client's round trip for the relay
// (NewClient installs it): fasthttp still pools, dials and caps the
// connections to the producer and writes the request, but a streamed
// answer's body is read by the relay itself (wire.Body), straight from
// the connection into the caller's buffer. fasthttp's own streamed body
// reads through the client's buffered reader, held for the whole stream
// (4 KiB per open stream, and a goroutine parked deep in its chunk
// parser), and hands out at most one chunk per read. A connection taken
// from the pool carries the request only if nothing arrived on it while it
// sat there (reusable), and bytes past a complete answer keep it from the pool
// (wire.BodyOptions.Stray): the bytes found reach no consumer. Bytes that
// arrive after fit's read, while the next request is written, cannot be
// told from its response (ClientOptions.NoReuse closes that window). A
// response that may carry no body by its method or status (HEAD, 1xx,
// 204, 304) never returns its connection to the pool: a body its producer
// sends anyway (Python's http.server with do_HEAD = do_GET) may arrive
// after the check, and would be read as the next request's response.
// Responses asked not to be streamed (or skipped) go through fasthttp's
// transport unchanged; a HEAD's response is the relay's.
type streamTransport struct {
	noReuse bool // ClientOptions.NoReuse: every request on a new connection
}

// maxInterim bounds the 1xx answers skipped before the real one.
const maxInterim = 10

func (t streamTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if t.noReuse {
		req.SetConnectionClose()
	}
	if !resp.StreamBody || resp.SkipBody {
		retry, err := fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
		if m, ok := malformedAnswer(err, nil).(*malformedAnswerError); ok && strings.Contains(err.Error(), "reading response headers") {
			return false, m // the client's errors quote no bytes (SecureErrorLogMessage): no excerpt
		}
		return retry, err
	}
	head := req.Header.IsHead()
	if head {
		resp.SkipBody = true
	}
	// A pooled connection not fit to carry the request (reusable) is closed
	// and the next taken, the request not written yet: each turn takes one
	// out of the pool, and a new connection is fit.
	cc, err := hc.AcquireConn(0, req.ConnectionClose())
	for err == nil && !fit(cc.Conn()) {
		hc.CloseConn(cc)
		cc, err = hc.AcquireConn(0, req.ConnectionClose())
	}
	if err != nil {
		return false, err
	}
	// Not resp.ParseNetConn: nothing asks the answer for its addresses,
	// and reading them touches the connection's cold state on every run.
	conn := cc.Conn()
	// A consumer that hangs up before the head interrupts the wait (see
	// headerWait), on the connection under firstByteConn, whose deadline
	// state belongs to this goroutine.
	hw := headerWaitOf(req)
	inner := conn
	if fc, ok := conn.(*firstByteConn); ok {
		inner = fc.Conn
	}
	if err := hw.attach(inner); err != nil {
		hc.CloseConn(cc)
		return false, err
	}

	reqClose := req.ConnectionClose() // read now: a write of its own changes req
	var deadline time.Time
	if hc.WriteTimeout > 0 {
		deadline = time.Now().Add(hc.WriteTimeout)
	}
	if err := hw.setDeadline(conn.SetWriteDeadline, deadline); err != nil {
		hc.CloseConn(cc)
		return err != errHeadWaitGone, err
	}
	var w *requestWrite
	if writtenFirst(req) {
		if err := writeRequest(hc, conn, req); err != nil {
			hc.CloseConn(cc)
			return writeFailed(hw, err)
		}
		deadline = time.Time{}
		if hc.ReadTimeout > 0 {
			deadline = time.Now().Add(hc.ReadTimeout)
		}
	} else {
		// The response is read as the request is written: until the write
		// ends, the wait for it is bounded by the write's deadline. The
		// write goes to the connection under firstByteConn, whose check
		// before a write (fit, made above) would see the reads.
		w = startWrite(hc, inner, req)
	}
	if err := hw.setDeadline(conn.SetReadDeadline, deadline); err != nil {
		if w != nil {
			w.stop(conn) //nolint:errcheck // the connection is closed
		}
		hc.CloseConn(cc)
		return err != errHeadWaitGone, err
	}
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	br := hc.AcquireReader(conn)
	err = readHeader(resp, br)
	early := false // the response came before the request was all written
	if w != nil {
		err = w.awaitHeader(hc, conn, hw, resp, br, err)
		var stopped bool
		var werr error
		if status := resp.StatusCode(); err != nil || status < 200 || status > 299 {
			// No response, or one that refuses the request (413, 401) or
			// is not HTTP any more (101): the rest of the body is not sent,
			// as RFC 9112 §9.6 asks of a client that sees an error response
			// while it sends a body, and as curl does ("HTTP error before
			// end of send, stop sending"). The connection is not reused, as
			// Go's net/http Transport reuses none whose request was not
			// all written.
			stopped, werr = w.stop(conn)
		} else {
			// A 2xx before the whole body: the producer may read it as it
			// responds (full duplex); it is written to its end first.
			werr = w.wait()
		}
		if err != nil && werr != nil && !stopped {
			hc.ReleaseReader(br)
			hc.CloseConn(cc)
			return writeFailed(hw, werr)
		}
		early = stopped || werr != nil
	}
	if hw.detach() {
		err = errHeadWaitGone // whatever the interrupted read said
	}
	if err != nil {
		err = malformedAnswer(err, br)
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		// No retry of a malformed answer: the producer would answer the same again.
		_, malformed := err.(*malformedAnswerError)
		return !malformed && err != errHeadWaitGone, err
	}
	// A connection whose request was not all written is not reused.
	closeConn := reqClose || early || resp.ConnectionClose()
	status := resp.StatusCode()
	if head || status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified {
		// No body (and a 101's connection is not HTTP any more): anything
		// buffered past the header is of no response, and a body sent late
		// would be read as the next request's: the connection is closed.
		if stray := br.Buffered(); stray > 0 && status >= 200 {
			if fc, ok := conn.(*firstByteConn); ok {
				fc.afterResponse(stray)
			}
		}
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		return false, nil
	}
	ret := connReturnOf(conn, hc, cc, (*fasthttp.HostClient).ReleaseConn, (*fasthttp.HostClient).CloseConn)
	o := wire.BodyOptions{
		Buffered:      br,
		ReleaseReader: ret.releaseReader,
		Release:       ret.release,
		KeepAlive:     !closeConn,
	}
	if fc, ok := conn.(*firstByteConn); ok {
		o.Stray = ret.stray
		// firstByteConn's deadline state belongs to the reader.
		o.Interrupt = fc.Conn
		// The dialer's socketConn, where reads by descriptor work.
		if sc, ok := fc.Conn.(*socketConn); ok {
			o.Raw = sc.RawConn()
		}
	}
	b := wire.NewBody(conn, resp.Header.ContentLength(), o)
	resp.SetBodyStream(b, resp.Header.ContentLength())
	return false, nil
}

var _ fasthttp.ReadCloserWithError = (*wire.Body)(nil)

// readHeader reads the header of the producer's response, past the interim
// (1xx) responses before it, at most maxInterim of them.
func readHeader(resp *fasthttp.Response, br *bufio.Reader) error {
	err := resp.Header.Read(br)
	for n := 0; err == nil && resp.StatusCode() >= 100 && resp.StatusCode() < 200 && resp.StatusCode() != fasthttp.StatusSwitchingProtocols; n++ {
		if n >= maxInterim {
			return errors.New("the producer sent too many interim (1xx) answers")
		}
		err = resp.Header.Read(br)
	}
	return err
}

// writeRequest writes req on conn through the client's buffered writer.
func writeRequest(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request) error {
	bw := hc.AcquireWriter(conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	return err
}

// writeFailed is RoundTrip's result for a request whose write failed (its
// connection closed).
func writeFailed(hw *headerWait, err error) (bool, error) {
	if hw.detach() {
		return false, errHeadWaitGone // the interrupted write
	}
	if isTimeout(err) {
		err = fasthttp.ErrTimeout
	}
	return true, err
}

// writeFirst is the largest request body written before the response is
// read, on the request's goroutine: the kernel's buffers take such a
// request at once whether the producer reads it or not (the producer's
// receive window alone is 64 KiB on Linux, macOS and Windows), so that
// the response is read right after. A larger body is written by a
// goroutine of its own while the response is read (startWrite), as Go's
// net/http Transport writes every request: a producer that responds
// before it has read the body (413 or 401 on the header of a large one),
// and then reads no more or closes, is heard at once.
const writeFirst = 32 << 10

// writtenFirst reports whether req is written before its response is read
// (writeFirst).
func writtenFirst(req *fasthttp.Request) bool {
	if req.IsBodyStream() {
		n := req.Header.ContentLength()
		return n >= 0 && n <= writeFirst
	}
	return len(req.Body()) <= writeFirst
}

// requestWrite is a request being written by a goroutine of its own
// (startWrite) while its response is read. It ends before RoundTrip
// returns (wait, stop): the request is the caller's again then.
type requestWrite struct {
	done  chan error
	ended bool
	err   error
	at    time.Time // when the write ended
}

func startWrite(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request) *requestWrite {
	w := &requestWrite{done: make(chan error, 1)}
	go func() {
		err := writeRequest(hc, conn, req)
		w.at = time.Now()
		w.done <- err
	}()
	return w
}

// wait returns the write's error once it has ended.
func (w *requestWrite) wait() error {
	if !w.ended {
		w.err, w.ended = <-w.done, true
	}
	return w.err
}

// stop ends the write (a write deadline in the past) unless it has ended,
// and returns its error; stopped reports that it was cut short.
func (w *requestWrite) stop(conn net.Conn) (stopped bool, err error) {
	if !w.ended {
		select {
		case w.err = <-w.done:
		default:
			conn.SetWriteDeadline(interruptNow) //nolint:errcheck // a closed connection ends the write too
			w.err, stopped = <-w.done, true
		}
		w.ended = true
	}
	return stopped, w.err
}

// awaitHeader goes on waiting for the response's header (readHeader) past a read
// that found none by the write's deadline (err, fasthttp.ErrTimeout): once
// the request was all written, the wait is bounded from the write's end,
// as for a request written first. Any other err is returned as it is.
func (w *requestWrite) awaitHeader(hc *fasthttp.HostClient, conn net.Conn, hw *headerWait, resp *fasthttp.Response, br *bufio.Reader, err error) error {
	for err == fasthttp.ErrTimeout && w.wait() == nil {
		var deadline time.Time
		if hc.ReadTimeout > 0 {
			if deadline = w.at.Add(hc.ReadTimeout); !deadline.After(time.Now()) {
				break
			}
		}
		if hw.setDeadline(conn.SetReadDeadline, deadline) != nil {
			break
		}
		err = readHeader(resp, br)
	}
	return err
}

// fit reports whether conn may carry a request (firstByteConn.fit); a
// connection not of the relay's dialer is taken as it is.
func fit(conn net.Conn) bool {
	fc, ok := conn.(*firstByteConn)
	return !ok || fc.reusable()
}

// connReturn gives an answer's producer connection and the client's reader
// of it back to the HostClient they came from (wire.BodyOptions' Release
// and ReleaseReader). One is made per producer connection (firstByteConn's
// ret) and reused by every answer on it, where each answer made two
// closures; C is fasthttp's pooled connection, whose type it does not
// export.
type connReturn[C any] struct {
	hc            *fasthttp.HostClient
	cc            C // this answer's; set before its body exists
	reuse, close  func(*fasthttp.HostClient, C)
	release       func(reuse bool)
	releaseReader func(*bufio.Reader)
	stray         func(n int) // the connection's firstByteConn.afterResponse; nil without one
}

// connReturnOf returns conn's connReturn for the answer on cc, made at the
// connection's first answer; a connection not of the relay's dialer gets
// one of its own.
func connReturnOf[C any](conn net.Conn, hc *fasthttp.HostClient, cc C, reuse, close func(*fasthttp.HostClient, C)) *connReturn[C] {
	fc, ok := conn.(*firstByteConn)
	if ok {
		if r, ok := fc.ret.(*connReturn[C]); ok && r.hc == hc {
			r.cc = cc
			return r
		}
	}
	r := &connReturn[C]{hc: hc, cc: cc, reuse: reuse, close: close}
	r.release, r.releaseReader = r.give, hc.ReleaseReader
	if ok {
		fc.ret = r
		r.stray = fc.afterResponse
	}
	return r
}

// give hands the connection back, for reuse or to be closed. cc is read
// first: once back in the pool the connection may carry the next answer,
// which sets it.
func (r *connReturn[C]) give(reuse bool) {
	cc := r.cc
	if reuse {
		r.reuse(r.hc, cc)
	} else {
		r.close(r.hc, cc)
	}
}
