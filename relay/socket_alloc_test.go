//go:build unix && !race

package relay

import (
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// A socketConn's reads (wire.Conn's, behind its noWait and request-header
// checks) and writes allocate nothing.
func TestSocketConnDoesNotAllocate(t *testing.T) {
	a, b := socketPair(t)
	testkit.NoAllocs(t, a, b)
}
