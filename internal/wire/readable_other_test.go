//go:build !unix

package wire

import (
	"syscall"
	"testing"
)

// waitReadable exists on Unix only, where streams are read by descriptor
// (wire.CanPoll); a test that needs it cannot run here.
func waitReadable(t *testing.T, fd int) {
	t.Helper()
	t.Fatalf("waiting for descriptor %d to be readable needs Unix", fd)
}

// waitConnReadable: as waitReadable.
func waitConnReadable(t *testing.T, rc syscall.RawConn) {
	t.Helper()
	t.Fatal("waiting for a connection to be readable needs Unix")
}
