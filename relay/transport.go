package relay

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"

	"github.com/valyala/fasthttp"
)

// streamTransport is the fasthttp client's round trip for the relay:
// fasthttp still pools, dials and writes the request, but a streamed
// response's body is read by the relay (wire.Body), straight from the
// connection into the caller's buffer. fasthttp's own streamed body ties up
// the client's buffered reader for the whole stream (4 KiB per stream, and
// a goroutine parked deep in its chunk parser) and hands out at most one
// chunk per read.
//
// A response that may carry no body (HEAD, 1xx, 204, 304) never returns
// its connection to the pool: a body the producer sends anyway (Python's
// http.server with do_HEAD = do_GET) may arrive after the reuse check, and
// would be read as the next request's response.
type streamTransport struct {
	noReuse bool // ClientOptions.NoReuse
}

// maxInterim bounds the 1xx responses skipped before the final one.
const maxInterim = 10

func (t streamTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if t.noReuse {
		req.SetConnectionClose()
	}
	if !resp.StreamBody || resp.SkipBody {
		retry, err := fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
		if m, ok := malformedResponse(err, nil).(*malformedResponseError); ok && strings.Contains(err.Error(), "reading response headers") {
			return false, m // the client's errors quote no bytes (SecureErrorLogMessage): no excerpt
		}
		return retry, err
	}
	isHead := req.Header.IsHead()
	if isHead {
		resp.SkipBody = true
	}
	// One not reusable is closed and the next taken: each turn takes one
	// out of the pool, and a new connection is reusable.
	cc, err := hc.AcquireConn(0, req.ConnectionClose())
	for err == nil && !reusableConn(cc.Conn()) {
		hc.CloseConn(cc)
		cc, err = hc.AcquireConn(0, req.ConnectionClose())
	}
	if err != nil {
		return false, err
	}
	// Not resp.ParseNetConn: reading the addresses touches the connection's
	// cold state on every run, and nothing asks for them.
	conn := cc.Conn()
	// A consumer's hangup interrupts the wait (headerWait) on the connection
	// under firstByteConn, whose deadline state belongs to this goroutine.
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
		return err != errHeaderWaitGone, err
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
		// Until the write ends, the wait for the response is bounded by the
		// write's deadline. Under firstByteConn: its reuse check would see
		// the reads.
		w = startWrite(hc, inner, req)
	}
	if err := hw.setDeadline(conn.SetReadDeadline, deadline); err != nil {
		if w != nil {
			w.stop(conn) //nolint:errcheck // the connection is closed
		}
		hc.CloseConn(cc)
		return err != errHeaderWaitGone, err
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
			// The rest of the body is not sent, as RFC 9112 §9.6 asks of a
			// client that sees an error response while it sends a body, and
			// as curl does. The connection is not reused, as in Go's
			// net/http Transport.
			stopped, werr = w.stop(conn)
		} else {
			// A 2xx before the whole body (full duplex): written to its end.
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
		err = errHeaderWaitGone // whatever the interrupted read said
	}
	if err != nil {
		err = malformedResponse(err, br)
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		// No retry: the producer would send the same malformed response.
		_, malformed := err.(*malformedResponseError)
		return !malformed && err != errHeaderWaitGone, err
	}
	// A connection whose request was not all written is not reused.
	closeConn := reqClose || early || resp.ConnectionClose()
	status := resp.StatusCode()
	if isHead || status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified {
		if n := br.Buffered(); n > 0 && status >= 200 {
			if fc, ok := conn.(*firstByteConn); ok {
				fc.afterResponse(n)
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
		o.Unsolicited = ret.unsolicited
		o.Interrupt = fc.Conn // its deadline state belongs to the reader
		if sc, ok := fc.Conn.(*socketConn); ok {
			o.Raw = sc.RawConn()
		}
	} else if tc, ok := conn.(*tls.Conn); ok {
		if fc, ok := tc.NetConn().(*firstByteConn); ok {
			// Beneath firstByteConn too: its first read would clear a
			// keep-alive's deadline, and its state is the reader's.
			o.Interrupt = fc.Conn
		}
	}
	b := wire.NewBody(conn, resp.Header.ContentLength(), o)
	resp.SetBodyStream(b, resp.Header.ContentLength())
	return false, nil
}

var _ fasthttp.ReadCloserWithError = (*wire.Body)(nil)

// readHeader reads the producer's response header, past up to maxInterim
// 1xx responses.
func readHeader(resp *fasthttp.Response, br *bufio.Reader) error {
	err := resp.Header.Read(br)
	for n := 0; err == nil && resp.StatusCode() >= 100 && resp.StatusCode() < 200 && resp.StatusCode() != fasthttp.StatusSwitchingProtocols; n++ {
		if n >= maxInterim {
			return errors.New("the producer sent too many interim (1xx) responses")
		}
		err = resp.Header.Read(br)
	}
	return err
}

func writeRequest(hc *fasthttp.HostClient, conn net.Conn, req *fasthttp.Request) error {
	bw := hc.AcquireWriter(conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	return err
}

// writeFailed is RoundTrip's result for a request whose write failed.
func writeFailed(hw *headerWait, err error) (bool, error) {
	if hw.detach() {
		return false, errHeaderWaitGone // the interrupted write
	}
	if isTimeout(err) {
		err = fasthttp.ErrTimeout
	}
	return true, err
}

// writeFirst is the largest request body written before the response is
// read, on the request's goroutine: the kernel's buffers take it at once
// (the receive window alone is 64 KiB on Linux, macOS and Windows). A
// larger body is written by its own goroutine while the response is read,
// as Go's net/http Transport writes every request, so that a producer that
// responds before reading the body (413, 401) is heard at once.
const writeFirst = 32 << 10

func writtenFirst(req *fasthttp.Request) bool {
	if req.IsBodyStream() {
		n := req.Header.ContentLength()
		return n >= 0 && n <= writeFirst
	}
	return len(req.Body()) <= writeFirst
}

// requestWrite is a request written by its own goroutine while its
// response is read. It ends before RoundTrip returns (wait, stop): the
// request is the caller's again then.
type requestWrite struct {
	done  chan error
	ended bool
	err   error
	at    time.Time // the write's end
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

func (w *requestWrite) wait() error {
	if !w.ended {
		w.err, w.ended = <-w.done, true
	}
	return w.err
}

// stop ends the write unless it has ended; stopped reports that it was cut
// short.
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

// awaitHeader waits on for the response header past a read that timed out
// at the write's deadline: once the request is written, the wait is
// bounded from the write's end, as for a request written first.
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

// reusableConn reports whether conn may carry a request (firstByteConn.reusable).
func reusableConn(conn net.Conn) bool {
	fc, ok := conn.(*firstByteConn)
	return !ok || fc.reusable()
}

// connReturn gives a producer connection and its reader back to their
// HostClient (wire.BodyOptions' Release and ReleaseReader). One per
// connection, reused by every response on it, where each made two
// closures; C is fasthttp's pooled connection, whose type is unexported.
type connReturn[C any] struct {
	hc            *fasthttp.HostClient
	cc            C // this response's; set before its body exists
	reuse, close  func(*fasthttp.HostClient, C)
	release       func(reuse bool)
	releaseReader func(*bufio.Reader)
	unsolicited   func(n int) // firstByteConn.afterResponse, or nil
}

// connReturnOf returns conn's connReturn for the response on cc.
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
		r.unsolicited = fc.afterResponse
	}
	return r
}

// give hands the connection back. cc is read first: once in the pool the
// connection may carry the next response, which sets it.
func (r *connReturn[C]) give(reuse bool) {
	cc := r.cc
	if reuse {
		r.reuse(r.hc, cc)
	} else {
		r.close(r.hc, cc)
	}
}
