package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// Timeouts bound every wait of a run; zero leaves one unbounded.
type Timeouts struct {
	Connect time.Duration // dialling (and the TLS handshake)
	Headers time.Duration // from the request's write to the response's headers
	Idle    time.Duration // between two reads of the body
	Run     time.Duration // the whole run, request to the body's end
}

// DefaultTimeouts suit LLM agents, which may think for minutes before the
// first token, as the relay's own defaults do.
var DefaultTimeouts = Timeouts{Connect: 10 * time.Second, Headers: 5 * time.Minute, Idle: 5 * time.Minute, Run: time.Hour}

// Client is one consumer connection: a minimal HTTP/1.1 client that posts a
// RunAgentInput and hands the response body to the caller as it is read,
// keeping the connection for the next run when the server allows it. It is
// written on raw connections so that the load generator's own cost stays
// small next to what it measures. It is not safe for concurrent use, except
// Close.
type Client struct {
	target   *url.URL
	addr     string // host:port
	path     string // path and query, as sent
	header   []byte // the request's header lines after the request line, up to Content-Length
	tls      *tls.Config
	Timeouts Timeouts

	mu     sync.Mutex // guards conn and closed against Close from another goroutine
	closed bool
	conn   net.Conn
	br     *bufio.Reader
	req    []byte
	runEnd time.Time
}

// Header is one request header a run sends (authorization, a tenant).
type Header struct{ Name, Value string }

// NewClient returns a client of target, an http or https URL, that sends
// headers with every run.
func NewClient(target string, headers []Header, t Timeouts) (*Client, error) {
	u, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	c := &Client{target: u, addr: u.Host, path: u.RequestURI(), Timeouts: t}
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		c.addr = net.JoinHostPort(u.Hostname(), port)
	}
	if u.Scheme == "https" {
		c.tls = &tls.Config{ServerName: u.Hostname()}
	}
	h := []byte(" HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	hasCT, hasAccept := false, false
	for _, hd := range headers {
		switch {
		case equalFold(hd.Name, "Content-Type"):
			hasCT = true
		case equalFold(hd.Name, "Accept"):
			hasAccept = true
		case equalFold(hd.Name, "Content-Length"), equalFold(hd.Name, "Transfer-Encoding"), equalFold(hd.Name, "Host"), equalFold(hd.Name, "Connection"):
			return nil, fmt.Errorf("header %s: set by the load generator", hd.Name)
		}
		h = append(h, hd.Name+": "+hd.Value+"\r\n"...)
	}
	if !hasCT {
		h = append(h, "Content-Type: application/json\r\n"...)
	}
	if !hasAccept {
		h = append(h, "Accept: text/event-stream\r\n"...)
	}
	c.header = append(h, "Content-Length: "...)
	return c, nil
}

// SetTLS sets the TLS configuration of an https client (its server name is
// kept when cfg has none); nil keeps the system's roots.
func (c *Client) SetTLS(cfg *tls.Config) {
	if c.tls == nil || cfg == nil {
		return
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = c.tls.ServerName
	}
	c.tls = cfg
}

// ParseTarget checks that s is an absolute http or https URL.
func ParseTarget(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	return u, nil
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// Close closes the connection for good: a Run in progress returns an
// error, and later ones fail. It may be called from any goroutine.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
	}
}

var errClosed = errors.New("client closed")

// Dial opens the connection now rather than on the first Run.
func (c *Client) Dial(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	d := net.Dialer{Timeout: c.Timeouts.Connect}
	var conn net.Conn
	var err error
	if c.tls != nil {
		td := tls.Dialer{NetDialer: &d, Config: c.tls}
		conn, err = td.DialContext(ctx, "tcp", c.addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", c.addr)
	}
	if err != nil {
		return &Error{Kind: classifyDial(err), Err: err}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		conn.Close()
		return errClosed
	}
	c.conn = conn
	c.mu.Unlock()
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 64<<10)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// Response is what a run's answer said before its body.
type Response struct {
	Status          int
	ContentType     string
	ContentEncoding string // the body's, which Run hands on undecoded
}

// Run posts input and calls head once the response's headers are in, then
// body with each piece of the body as it arrives (borrowed until body
// returns). A body that is not an event stream (see Error) is read, up to a
// short prefix kept for the error, and not handed to body.
func (c *Client) Run(ctx context.Context, input []byte, head func(Response), body func([]byte)) error {
	start := time.Now()
	c.runEnd = time.Time{}
	if c.Timeouts.Run > 0 {
		c.runEnd = start.Add(c.Timeouts.Run)
	}
	fresh := c.conn == nil
	if err := c.Dial(ctx); err != nil {
		return err
	}
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, c.path...)
	c.req = append(c.req, c.header...)
	c.req = strconv.AppendInt(c.req, int64(len(input)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, input...)
	c.deadline(c.Timeouts.Headers)
	if _, err := c.conn.Write(c.req); err != nil {
		c.drop()
		if !fresh && isReset(err) {
			// The server closed the kept connection meanwhile: once more on
			// a new one.
			return c.Run(ctx, input, head, body)
		}
		return c.classify(err, PhaseHeaders)
	}
	reuse, err := c.readResponse(head, body, fresh)
	if err != nil || !reuse {
		c.drop()
	}
	var stale *staleConn
	if errors.As(err, &stale) {
		return c.Run(ctx, input, head, body)
	}
	return err
}

// staleConn is a kept connection the server had closed before it read the
// request: the run is retried on a new one.
type staleConn struct{}

func (*staleConn) Error() string { return "stale connection" }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)
}

func (c *Client) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// deadline sets the read deadline d from now (or none), never past the
// run's end.
func (c *Client) deadline(d time.Duration) {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	if !c.runEnd.IsZero() && (t.IsZero() || c.runEnd.Before(t)) {
		t = c.runEnd
	}
	c.conn.SetDeadline(t)
}

func (c *Client) touch() {
	if c.Timeouts.Idle > 0 || !c.runEnd.IsZero() {
		c.deadline(c.Timeouts.Idle)
	}
}

// Phase is where in a run a timeout struck.
type Phase string

// The phases of a run.
const (
	PhaseConnect Phase = "connect"
	PhaseHeaders Phase = "headers"
	PhaseBody    Phase = "body"
)

// classify turns a read or write error into an Error of its kind.
func (c *Client) classify(err error, ph Phase) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		kind := KindTimeoutIdle
		switch {
		case !c.runEnd.IsZero() && !time.Now().Before(c.runEnd):
			kind = KindTimeoutRun
		case ph == PhaseHeaders:
			kind = KindTimeoutHeaders
		}
		return &Error{Kind: kind, Err: err}
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errClosed
	}
	if ph == PhaseHeaders {
		return &Error{Kind: KindBroken, Err: fmt.Errorf("before the response's headers: %w", err)}
	}
	return &Error{Kind: KindBroken, Err: err}
}

func classifyDial(err error) string {
	var ne net.Error
	var ve *tls.CertificateVerificationError
	var re tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.As(err, &ve), errors.As(err, &re):
		return KindTLS
	case errors.As(err, &ne) && ne.Timeout():
		return KindTimeoutConnect
	}
	return KindUnreachable
}

// maxErrorBody is how much of an answer that is not an event stream is kept
// for its error.
const maxErrorBody = 256

func (c *Client) readResponse(head func(Response), body func([]byte), fresh bool) (reuse bool, err error) {
	br := c.br
	line, err := br.ReadSlice('\n')
	if err != nil {
		if !fresh && err == io.EOF && br.Buffered() == 0 {
			return false, &staleConn{}
		}
		return false, c.classify(err, PhaseHeaders)
	}
	f := bytes.Fields(line)
	if len(f) < 2 || !bytes.HasPrefix(f[0], []byte("HTTP/1.")) {
		return false, &Error{Kind: KindNotHTTP, Err: fmt.Errorf("the answer does not start with an HTTP/1.x status line: %q", trim(line))}
	}
	status, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return false, &Error{Kind: KindNotHTTP, Err: fmt.Errorf("bad status line %q", trim(line))}
	}
	http10 := bytes.Equal(f[0], []byte("HTTP/1.0"))
	clen, chunked, closeConn := int64(-1), false, http10
	var ctype, coding string
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return false, c.classify(err, PhaseHeaders)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			clen, _ = strconv.ParseInt(string(v), 10, 64)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			closeConn = bytes.EqualFold(v, []byte("close"))
		case bytes.EqualFold(k, []byte("Content-Type")):
			ctype = string(v)
		case bytes.EqualFold(k, []byte("Content-Encoding")):
			coding = string(v)
		}
	}
	if status == 100 {
		return c.readResponse(head, body, false)
	}
	head(Response{Status: status, ContentType: ctype, ContentEncoding: coding})
	var errBody []byte
	sse := status/100 == 2 && isEventStream(ctype)
	if !sse {
		body = func(p []byte) {
			if n := maxErrorBody - len(errBody); n > 0 {
				errBody = append(errBody, p[:min(n, len(p))]...)
			}
		}
	}
	c.touch()
	framing := wire.NewFraming(-2) // until the connection closes
	switch {
	case chunked:
		framing = wire.NewFraming(-1)
	case clen >= 0:
		framing = wire.NewFraming(int(clen))
	default:
		closeConn = true
	}
	if err = c.readBody(br, &framing, body); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, &Error{Kind: KindBroken, Err: errors.New("the connection closed inside the body")}
		}
		return false, c.classify(err, PhaseBody)
	}
	switch {
	case status/100 != 2:
		// The kind names the status; the error says what the body said.
		msg := trim(errBody)
		if msg == "" {
			msg = "(an empty body)"
		}
		return !closeConn, &Error{Kind: "http " + strconv.Itoa(status), Err: errors.New(msg)}
	case !sse:
		return !closeConn, &Error{Kind: KindNotSSE, Err: fmt.Errorf("HTTP %d with Content-Type %q, not text/event-stream: %s", status, ctype, trim(errBody))}
	}
	return !closeConn, nil
}

func trim(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// isEventStream reports whether a Content-Type is text/event-stream, in any
// letter case and with any parameters.
func isEventStream(ct string) bool {
	mt, _, _ := bytes.Cut([]byte(ct), []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte("text/event-stream"))
}

// readBody hands body the answer's body as it arrives, each piece borrowed
// until body returns: br's bytes, framing removed in place (wire.Framing,
// as the relay reads a producer's answer), up to the end of the body. What
// follows it stays in br for the connection's next answer.
func (c *Client) readBody(br *bufio.Reader, framing *wire.Framing, body func([]byte)) error {
	for !framing.Done() {
		if _, err := br.Peek(1); err != nil {
			if err == io.EOF {
				if err = framing.End(); err == io.EOF {
					return nil // the body ends with the connection
				}
			}
			return err
		}
		p, _ := br.Peek(br.Buffered())
		n, err := framing.Decode(p) // p is discarded below, but for the next answer's start
		if err != nil {
			return err
		}
		if n > 0 {
			body(p[:n])
		}
		br.Discard(len(p) - framing.Rest())
		c.touch()
	}
	return nil
}
