package wire

import (
	"compress/gzip"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// blockingBody returns a close-delimited body read blocking (not polled)
// from one end of a loopback TCP connection, and the other end.
func blockingBody(t *testing.T) (peer net.Conn, b *Body) {
	t.Helper()
	c, p := testkit.TCPPair(t)
	return p, NewBody(c, -2, BodyOptions{Release: func(bool) {}})
}

// readAsync reads r to its end on a goroutine of its own, as the stream's
// goroutine reads the producer's body.
func readAsync(r func() ([]byte, error)) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		b, err := r()
		done <- readResult{b, err}
	}()
	return done
}

type readResult struct {
	b   []byte
	err error
}

func awaitRead(t *testing.T, done <-chan readResult) readResult {
	t.Helper()
	return testkit.Await(t, done, "the read did not end")
}

// A read deadline a Body's reader set calls OnReadDeadline and the read
// goes on: a gzip stream whose producer is silent across several deadlines
// decodes whole, since compress/flate, which keeps the first error its
// source returns, never sees the timeout.
func TestReadDeadlineIsNotAnErrorAboveTheBody(t *testing.T) {
	peer, b := blockingBody(t)
	deadlines := make(chan struct{}, 16)
	b.OnReadDeadline(func() (time.Time, error) {
		select {
		case deadlines <- struct{}{}:
		default:
		}
		return time.Now().Add(5 * time.Millisecond), nil
	})
	if err := b.SetReadDeadline(time.Now().Add(5 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(peer)
	zw.Write([]byte("before the silence;")) //nolint:errcheck
	zw.Flush()                              //nolint:errcheck
	done := readAsync(func() ([]byte, error) {
		zr, err := gzip.NewReader(b)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	})
	for range 3 {
		testkit.Await(t, deadlines, "no deadline passed")
	}
	zw.Write([]byte("after it")) //nolint:errcheck
	zw.Close()                   //nolint:errcheck
	peer.Close()
	if got := awaitRead(t, done); string(got.b) != "before the silence;after it" || got.err != nil {
		t.Fatalf("read %q, %v", got.b, got.err)
	}
}

// An error from OnReadDeadline (the consumer's write failed) ends the body
// with it.
func TestOnReadDeadlineErrorEndsTheBody(t *testing.T) {
	_, b := blockingBody(t)
	gone := errors.New("the consumer went away")
	b.OnReadDeadline(func() (time.Time, error) { return time.Time{}, gone })
	if err := b.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	for range 2 {
		if _, err := b.Read(buf); err != gone {
			t.Fatalf("read: %v, want %v", err, gone)
		}
	}
}

// A close ends a read waiting for a deadline that OnReadDeadline set, at
// once: the close's past deadline is not taken for one (OnReadDeadline is
// not called), and the one OnReadDeadline returns does not replace it when
// the close comes while OnReadDeadline runs.
func TestCloseEndsAReadWithADeadlineArmed(t *testing.T) {
	t.Run("waiting", func(t *testing.T) {
		_, b := blockingBody(t)
		b.OnReadDeadline(func() (time.Time, error) {
			t.Error("OnReadDeadline called for the close's deadline")
			return time.Now().Add(time.Hour), nil
		})
		if err := b.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		waiting := make(chan struct{})
		done := readAsync(func() ([]byte, error) {
			close(waiting)
			return io.ReadAll(b)
		})
		<-waiting
		testkit.WaitFor(t, "the read waits", func() bool { return b.state.Load() == bodyReading })
		b.CloseWithError(nil) //nolint:errcheck // from another goroutine, as a cancel does
		if got := awaitRead(t, done); got.err != ErrBodyClosed {
			t.Fatalf("read %q, %v; want ErrBodyClosed", got.b, got.err)
		}
	})
	t.Run("while OnReadDeadline runs", func(t *testing.T) {
		_, b := blockingBody(t)
		b.OnReadDeadline(func() (time.Time, error) {
			b.CloseWithError(nil) //nolint:errcheck // as a cancel between the deadline and the next
			return time.Now().Add(time.Hour), nil
		})
		if err := b.SetReadDeadline(time.Now()); err != nil {
			t.Fatal(err)
		}
		done := readAsync(func() ([]byte, error) { return io.ReadAll(b) })
		if got := awaitRead(t, done); got.err != ErrBodyClosed {
			t.Fatalf("read %q, %v; want ErrBodyClosed", got.b, got.err)
		}
	})
}

// A body without OnReadDeadline returns the timeout, as before.
func TestReadDeadlineWithoutOnReadDeadline(t *testing.T) {
	_, b := blockingBody(t)
	if err := b.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v", err)
	}
}
