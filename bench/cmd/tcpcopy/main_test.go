package main

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Bytes go through both ways, larger than one read, and each side's end
// reaches the other: the consumer's half-close ends the producer's read,
// the producer's close ends the consumer's.
func TestServeForwardsBothWaysAndEnds(t *testing.T) {
	producer := acceptOne(t, func(c net.Conn) {
		defer c.Close()
		got, _ := io.ReadAll(c)                 // until the consumer's half-close
		c.Write(append([]byte("got:"), got...)) //nolint:errcheck // the test reads it
	})
	proxy := acceptOne(t, func(c net.Conn) { serve(c.(*net.TCPConn), producer.Addr().String()) })

	c, err := net.Dial("tcp", proxy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a hang fails below
	sent := strings.Repeat("0123456789", 10_000)    // three reads' worth
	if _, err := io.WriteString(c, sent); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite() //nolint:errcheck // checked by what comes back
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte("got:"+sent)) {
		t.Errorf("got %d bytes back, want %d", len(got), len("got:"+sent))
	}
}

// acceptOne listens on a loopback port, closed when the test ends, and
// hands its first connection to handle in a goroutine of its own.
func acceptOne(t *testing.T, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		handle(c)
	}()
	return ln
}
