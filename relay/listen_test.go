package relay

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// failingListener fails its first fails accepts with err (all of them
// when fails is negative), then accepts conn; after Close it fails with
// net.ErrClosed.
type failingListener struct {
	err    error
	fails  int
	conn   net.Conn
	closed chan struct{}
}

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: net.ErrClosed}
	default:
	}
	if l.fails != 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", l.err)}
	}
	return l.conn, nil
}

func (l *failingListener) Close() error { close(l.closed); return nil }
func (l *failingListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
}

// An accept that fails for want of descriptors (EMFILE) is retried until
// it succeeds: Accept returns the connection, never the error; each failure
// is counted by its reason, and logged once for a burst within a second.
func TestRetryAcceptOutlastsDescriptorErrors(t *testing.T) {
	for _, tc := range []struct {
		err    syscall.Errno
		reason string
	}{
		{syscall.EMFILE, "emfile"},
		{syscall.ENFILE, "enfile"},
		{syscall.ENOBUFS, "enobufs"},
		{syscall.ENOMEM, "enomem"},
		{syscall.ECONNREFUSED, "other"},
	} {
		conn, peer := net.Pipe()
		defer peer.Close()
		core, logs := observer.New(zapcore.WarnLevel)
		var reasons []string
		ln := RetryAccept(&failingListener{err: tc.err, fails: 5, conn: conn, closed: make(chan struct{})},
			zap.New(core), func(r string) { reasons = append(reasons, r) })
		c, err := ln.Accept()
		if err != nil || c != conn {
			t.Fatalf("%v: Accept returned %v, %v; want the connection", tc.err, c, err)
		}
		if len(reasons) != 5 {
			t.Errorf("%v: %d failures counted, want 5", tc.err, len(reasons))
		}
		for _, r := range reasons {
			if r != tc.reason {
				t.Errorf("%v: counted as %q, want %q", tc.err, r, tc.reason)
			}
		}
		// 5, 10, 20, 40 ms of backoff between the five: one line, the first.
		lines := logs.All()
		if len(lines) != 1 {
			t.Fatalf("%v: %d log lines for 5 failures within a second, want 1: %v", tc.err, len(lines), lines)
		}
		f := lines[0].ContextMap()
		if f["reason"] != tc.reason || f["errors"] != int64(1) || f["listen"] != "127.0.0.1:8080" {
			t.Errorf("%v: log line %v", tc.err, f)
		}
		ln.Close()
	}
}

// Closing the listener ends an Accept that keeps failing: Accept returns
// the listener's close, which ends the server's Serve.
func TestRetryAcceptEndsAtClose(t *testing.T) {
	failed := make(chan string, 1)
	ln := RetryAccept(&failingListener{err: syscall.EMFILE, fails: -1, closed: make(chan struct{})}, zap.NewNop(),
		func(r string) {
			select {
			case failed <- r:
			default:
			}
		})
	accepted := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		accepted <- err
	}()
	<-failed // Accept is failing, and backing off
	ln.Close()
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
