//go:build unix && !race

package wire

import (
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// Reads and writes allocate nothing: their RawConn callbacks are made once
// per connection (Init).
func TestConnDoesNotAllocate(t *testing.T) {
	a, b := connPair(t)
	testkit.NoAllocs(t, a, b)
}

// Stray on a quiet connection, as a client asks before each reuse,
// allocates nothing.
func TestConnStrayDoesNotAllocate(t *testing.T) {
	_, b := connPair(t)
	if n := testing.AllocsPerRun(1000, func() { b.Stray() }); n != 0 { //nolint:errcheck
		t.Errorf("Stray allocates %.1f times a call", n)
	}
}
