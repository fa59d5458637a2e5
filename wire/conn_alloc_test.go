//go:build unix && !race

package wire

import "testing"

// Reads and writes allocate nothing: their RawConn callbacks are made once
// per connection (Init).
func TestConnDoesNotAllocate(t *testing.T) {
	a, b := connPair(t)
	msg, buf := []byte("data: {}\n\n"), make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := a.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per write and read", n)
	}
}
