package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/agui-relay/agui-relay/internal/h1"
)

// Client is one consumer connection: a minimal HTTP/1.1 client that posts a
// RunAgentInput and hands the response body to the caller as it is read,
// reusing the connection for the next run when the server allows it. Like
// the producer it is written on raw connections to keep the load
// generator's own cost low.
type Client struct {
	Addr string
	// Timeout bounds each read; 0 means none.
	Timeout time.Duration

	mu     sync.Mutex // guards conn against Close from another goroutine
	closed bool
	conn   net.Conn
	br     *bufio.Reader
	req    []byte
}

// Input is the RunAgentInput the bench posts (runId is filled per run).
func Input(runID string) []byte {
	return []byte(`{"threadId":"thread-bench","runId":"` + runID + `","state":{},"messages":[{"id":"u1","role":"user","content":"Summarise the design notes."}],"tools":[],"context":[],"forwardedProps":{}}`)
}

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
func (c *Client) Dial() error {
	if c.conn != nil {
		return nil
	}
	conn, err := net.DialTimeout("tcp", c.Addr, 10*time.Second)
	if err != nil {
		return err
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

// Run posts input to path and calls body with each piece of the response
// body as it arrives. It returns the HTTP status.
func (c *Client) Run(path string, input []byte, body func([]byte)) (int, error) {
	if err := c.Dial(); err != nil {
		return 0, err
	}
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.Addr...)
	c.req = append(c.req, "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "...)
	c.req = strconv.AppendInt(c.req, int64(len(input)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, input...)
	if c.Timeout > 0 {
		c.conn.SetDeadline(time.Now().Add(c.Timeout))
	}
	if _, err := c.conn.Write(c.req); err != nil {
		c.drop()
		return 0, err
	}
	status, reuse, err := c.readResponse(body)
	if err != nil || !reuse {
		c.drop()
	}
	return status, err
}

func (c *Client) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// deadlineReader renews the read deadline before each read.
func (c *Client) touch() {
	if c.Timeout > 0 {
		c.conn.SetReadDeadline(time.Now().Add(c.Timeout))
	}
}

func (c *Client) readResponse(body func([]byte)) (status int, reuse bool, err error) {
	br := c.br
	c.touch()
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	f := bytes.Fields(line)
	if len(f) < 2 {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	http10 := bytes.Equal(f[0], []byte("HTTP/1.0"))
	clen, chunked, closeConn := int64(-1), false, http10
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return status, false, err
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
		}
	}
	var errBody []byte
	if status != 200 {
		body = func(p []byte) {
			if len(errBody) < 512 {
				errBody = append(errBody, p...)
			}
		}
	}
	switch {
	case chunked:
		_, err = h1.ReadChunked(br, func(p []byte) { body(p); c.touch() })
	case clen >= 0:
		err = readN(br, clen, body)
	default:
		closeConn = true
		for {
			c.touch()
			if _, err = br.Peek(1); err != nil {
				break
			}
			p, _ := br.Peek(br.Buffered())
			body(p)
			br.Discard(len(p))
		}
		if err == io.EOF {
			err = nil
		}
	}
	if err == nil && status != 200 {
		err = fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(errBody))
	}
	return status, !closeConn, err
}

func readN(br *bufio.Reader, n int64, body func([]byte)) error {
	for n > 0 {
		if _, err := br.Peek(1); err != nil {
			return err
		}
		want := br.Buffered()
		if int64(want) > n {
			want = int(n)
		}
		p, _ := br.Peek(want)
		body(p)
		br.Discard(want)
		n -= int64(want)
	}
	return nil
}
