//go:build unix && !race

package relay

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Writing by descriptor allocates nothing per event either: the RawConn
// callback is made once per writer.
func TestPassThroughToSocketDoesNotAllocate(t *testing.T) {
	relaySide, consumerSide := tcpPair(t)
	go io.Copy(io.Discard, consumerSide) //nolint:errcheck // ends with the test's cleanup
	cw := newConsumerWriter(relaySide, true, time.Minute)
	if _, ok := cw.out.(*socketConn); !ok {
		t.Fatal("a TCP connection is not written by descriptor")
	}
	w := bufio.NewWriterSize(cw, 16)
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, w)
	startRun(t, st)
	f := canonicalFrame(contentEvent)
	if n := testing.AllocsPerRun(1000, func() {
		if err := st.Frame(f); err != nil {
			t.Fatal(err)
		}
		if err := flush(w, cw); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}
