package harness

import (
	"net"
	"testing"
)

// The addresses are all different and free once returned: the proxy's and
// its admin address must not be one port.
func TestFreePortsAreDistinctAndFree(t *testing.T) {
	addrs, err := FreePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s handed out twice in %v", a, addrs)
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s not free: %v", a, err)
		}
		ln.Close()
	}
}
