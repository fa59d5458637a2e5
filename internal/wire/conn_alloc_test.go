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
