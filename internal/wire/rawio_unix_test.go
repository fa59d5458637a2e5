//go:build unix

package wire

import (
	"bytes"
	"syscall"
	"testing"
)

// socketPair returns two connected non-blocking stream sockets, closed
// when the test ends.
func socketPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	for _, fd := range fds {
		if err := syscall.SetNonblock(fd, true); err != nil {
			t.Fatalf("nonblock: %v", err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
	}
	return fds[0], fds[1]
}

// WritevFD writes the pieces in order from the skip'th byte on, empty
// pieces included (in one writev(2), or piece by piece under the race
// detector, so the caller goes on from what a call wrote), and ReadFD
// reads them back as they were written.
func TestWritevFDSkipsAndReadFDReads(t *testing.T) {
	a, b := socketPair(t)
	pieces := [4][]byte{[]byte("head;"), nil, []byte("1f\r\n"), []byte("data\r\n")}
	all := bytes.Join(pieces[:], nil)
	for skip := 0; skip < len(all); skip++ {
		for wrote := skip; wrote < len(all); {
			n, err := WritevFD(a, &pieces, wrote)
			if err != nil || n <= 0 {
				t.Fatalf("skip %d, from %d: wrote %d, %v", skip, wrote, n, err)
			}
			if !raceEnabled && n != len(all)-wrote {
				t.Fatalf("skip %d: one writev wrote %d, want %d", skip, n, len(all)-wrote)
			}
			wrote += n
		}
		got := make([]byte, len(all)+1)
		m, err := ReadFD(b, got)
		if err != nil || !bytes.Equal(got[:m], all[skip:]) {
			t.Fatalf("skip %d: read %q, %v; want %q", skip, got[:m], err, all[skip:])
		}
	}
}

// A socket with nothing to read, or no room to write, answers EAGAIN at
// once; a closed peer reads as 0 bytes.
func TestRawIOWouldBlockAndEOF(t *testing.T) {
	a, b := socketPair(t)
	buf := make([]byte, 64)
	if _, err := ReadFD(b, buf); err != syscall.EAGAIN {
		t.Fatalf("read of an empty socket: %v, want EAGAIN", err)
	}
	big := [4][]byte{bytes.Repeat([]byte("x"), 1<<16)}
	for {
		_, err := WritevFD(a, &big, 0)
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			t.Fatalf("filling the socket: %v", err)
		}
	}
	syscall.Close(a)
	for {
		n, err := ReadFD(b, big[0])
		if err != nil {
			t.Fatalf("draining: %v", err)
		}
		if n == 0 {
			break
		}
	}
	if n, err := ReadFD(b, nil); n != 0 || err != nil {
		t.Fatalf("an empty read: %d, %v", n, err)
	}
}
