package relay

import (
	"bytes"
	"io"
	"net"

	"github.com/valyala/fasthttp"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 §7.6.1 (and the
// obsolete ones proxies still see): they describe one connection and are
// never forwarded. Every header named in Connection is hop-by-hop too.
var hopHeaders = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// hopLengths has bit n set when a name of hopHeaders is n bytes long
// (TestHopLengths): most keys are of no such length and need no compare.
const hopLengths = 1<<2 | 1<<7 | 1<<10 | 1<<16 | 1<<17 | 1<<18 | 1<<19

func isHop(key []byte) bool {
	if len(key) >= 64 || hopLengths&(1<<len(key)) == 0 {
		return false
	}
	for _, h := range hopHeaders {
		if len(key) == len(h) && bytes.EqualFold(key, []byte(h)) {
			return true
		}
	}
	return false
}

func is(key []byte, name string) bool {
	return len(key) == len(name) && bytes.EqualFold(key, []byte(name))
}

// appendConnectionTokens appends the header names a Connection header
// (k: v) lists. The tokens are slices of v, valid while the message is.
func appendConnectionTokens(tokens [][]byte, k, v []byte) [][]byte {
	if !is(k, "Connection") {
		return tokens
	}
	for t := range bytes.SplitSeq(v, []byte(",")) {
		if t = bytes.TrimSpace(t); len(t) > 0 {
			tokens = append(tokens, t)
		}
	}
	return tokens
}

type normalizer interface {
	DisableNormalizing() (was bool)
	EnableNormalizing() (was bool)
}

// namesAsIs turns dst's normalising of header names off when src's are
// normalised already, so that they are not normalised twice. It reports
// whether dst's is to be turned on again after the copy.
func namesAsIs(dst, src normalizer) (restore bool) {
	if src.DisableNormalizing() {
		return false
	}
	src.EnableNormalizing()
	return !dst.DisableNormalizing()
}

// copyRequestHeaders copies the end-to-end headers of the consumer's request
// to the producer's, but Host and Content-Length. Those a Connection header
// names are removed after the copy (they are seldom any): one pass, not two.
// copyResponseHeaders repeats its body because a generic copy is compiled
// once for every pointer type, calling All through a dictionary, so its
// iterator state and token buffer escape: 10 allocations a call in
// BenchmarkRunHeaders, against 0 (checked with go build -gcflags=-m).
func copyRequestHeaders(dst, src *fasthttp.RequestHeader) {
	var buf [4][]byte // a Connection header's tokens, on the stack
	tokens := buf[:0]
	restore := namesAsIs(dst, src)
	for k, v := range src.All() {
		tokens = appendConnectionTokens(tokens, k, v)
		if isHop(k) || is(k, "Host") || is(k, "Content-Length") {
			continue
		}
		dst.AddBytesKV(k, v)
	}
	if restore {
		dst.EnableNormalizing()
	}
	for _, t := range tokens {
		dst.DelBytes(t)
	}
}

// copyResponseHeaders is copyRequestHeaders for the producer's response,
// but Content-Length.
func copyResponseHeaders(dst, src *fasthttp.ResponseHeader) {
	var buf [4][]byte
	tokens := buf[:0]
	restore := namesAsIs(dst, src)
	for k, v := range src.All() {
		tokens = appendConnectionTokens(tokens, k, v)
		if isHop(k) || is(k, "Content-Length") {
			continue
		}
		dst.AddBytesKV(k, v)
	}
	if restore {
		dst.EnableNormalizing()
	}
	for _, t := range tokens {
		dst.DelBytes(t)
	}
}

// setForwarded adds the X-Forwarded-* headers, as reverse proxies do.
func setForwarded(dst *fasthttp.RequestHeader, ctx *fasthttp.RequestCtx) {
	var buf [128]byte
	host := buf[:0]
	if prior := dst.Peek("X-Forwarded-For"); len(prior) > 0 {
		host = append(append(host, prior...), ", "...)
	}
	n := len(host)
	// Not the "host:port" string, to split again.
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		host = a.AddrPort().Addr().Unmap().AppendTo(host)
	} else if h, _, err := net.SplitHostPort(ctx.RemoteAddr().String()); err == nil {
		host = append(host, h...)
	}
	if len(host) > n {
		dst.SetBytesV("X-Forwarded-For", host)
	}
	if len(dst.Peek("X-Forwarded-Host")) == 0 {
		dst.SetBytesV("X-Forwarded-Host", ctx.Host())
	}
	if len(dst.Peek("X-Forwarded-Proto")) == 0 {
		proto := "http"
		if ctx.IsTLS() {
			proto = "https"
		}
		dst.Set("X-Forwarded-Proto", proto)
	}
}

// passBody is a producer's response body passed on unchanged. The server
// closes it when the response is written or the consumer leaves, which
// releases the producer's response.
type passBody struct {
	u    *upstreamBody
	resp *fasthttp.Response
	done func()
}

func (p *passBody) Read(b []byte) (int, error) { return p.u.Read(b) }

func (p *passBody) CloseWithError(err error) error {
	p.u.finish(err)
	fasthttp.ReleaseResponse(p.resp)
	if p.done != nil {
		p.done()
	}
	return nil
}

// passThrough responds with the producer's response unchanged but for
// hop-by-hop headers, streamed. It takes ownership of resp.
func (r *Relay) passThrough(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, done func()) {
	ctx.SetStatusCode(resp.StatusCode())
	copyResponseHeaders(&ctx.Response.Header, &resp.Header)
	body, ok := resp.BodyStream().(fasthttp.ReadCloserWithError)
	if !ok { // no body to stream (HEAD, 204, 304) or a Doer that buffers
		ctx.SetBody(resp.Body())
		fasthttp.ReleaseResponse(resp)
		if done != nil {
			done()
		}
		return
	}
	n := resp.Header.ContentLength()
	if n < 0 {
		n = -1
		// Unknown length may be a long stream: no write deadline.
		ctx.SetWriteDeadline(zeroTime) //nolint:errcheck // only fails without a connection
	}
	ctx.Response.SetBodyStream(&passBody{u: newUpstreamBody(body), resp: resp, done: done}, n)
}

var _ fasthttp.ReadCloserWithError = (*passBody)(nil)
var _ io.Reader = (*upstreamBody)(nil)
