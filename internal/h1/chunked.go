// Package h1 holds the pieces of HTTP/1.1 framing that the synthetic
// producer (synth) and the load generator (load) share: both speak HTTP/1.1
// on raw connections to keep their own cost small.
package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
)

// ReadChunked reads a chunked body from br. With fn nil it returns the
// payload appended to a new slice; otherwise it hands each piece to fn as
// soon as it is read (the piece is borrowed from br until fn returns) and
// returns nil.
func ReadChunked(br *bufio.Reader, fn func([]byte)) ([]byte, error) {
	var dst []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return dst, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return dst, fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// Trailers until a blank line.
			for {
				line, err = br.ReadSlice('\n')
				if err != nil {
					return dst, err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return dst, nil
				}
			}
		}
		for n > 0 {
			if br.Buffered() == 0 {
				// Wait for at least one byte, then take what has arrived:
				// events are handled as soon as they are read.
				if _, err := br.Peek(1); err != nil {
					return dst, err
				}
			}
			want := br.Buffered()
			if int64(want) > n {
				want = int(n)
			}
			piece, _ := br.Peek(want)
			if fn != nil {
				fn(piece)
			} else {
				dst = append(dst, piece...)
			}
			br.Discard(len(piece))
			n -= int64(len(piece))
		}
		if _, err := br.Discard(2); err != nil {
			return dst, err
		}
	}
}
