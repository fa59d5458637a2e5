//go:build linux

package relay

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/negotiate"
)

// BenchmarkIdleStreamMemory opens b.N streams through a relay whose
// producer sends RUN_STARTED and then nothing, lets them park, and reports
// what each holds in the relay: live heap and goroutine stacks per stream
// (the part of the process's RSS that is the streams' own; RSS adds the
// heap the garbage collector keeps for its next cycle, see bench/README.md).
// The figures include this process's two ends of each stream's sockets as
// producer and consumer (a few hundred bytes of heap).
//
//	go test -run '^$' -bench IdleStreamMemory -benchtime 1000x ./relay
func BenchmarkIdleStreamMemory(b *testing.B) {
	b.Run("pass-through", func(b *testing.B) { benchIdleStreams(b, negotiate.Version{}) })
	b.Run("1.0-to-0.0.45", func(b *testing.B) { benchIdleStreams(b, negotiate.MustParse("0.0.45")) })
}

func benchIdleStreams(b *testing.B, consumer negotiate.Version) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1<<16)
	go func() { // the producer: one idle run per connection, no goroutine per run
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
			// The small input came with the header.
			start := `data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(start), start)
			held <- c
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	r := &Relay{Upstream: "http://" + ln.Addr().String(), Client: NewClient(ClientOptions{MaxConns: 1 << 20}), Log: zap.NewNop(), ConsumerVersion: consumer, Poller: testPoller(b), ReuseGoroutines: true}
	parkingAfter(r, 10*time.Millisecond)
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := r.Server()
	go srv.Serve(rl)     //nolint:errcheck
	defer srv.Shutdown() //nolint:errcheck

	const input = `{"threadId":"t","runId":"r","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}`
	open := func(n int) []net.Conn {
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("tcp", rl.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "POST /agent HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(input), input)
			buf := make([]byte, 4096)
			got := ""
			for !strings.Contains(got, "RUN_STARTED") {
				k, err := c.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				got += string(buf[:k])
			}
			conns = append(conns, c)
		}
		return conns
	}
	measure := func() (heap, stack uint64) {
		time.Sleep(100 * time.Millisecond) // every stream parks
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	for _, c := range open(10) { // warm the pools
		defer c.Close()
	}
	heap0, stack0 := measure()
	b.ResetTimer()
	conns := open(b.N)
	heap1, stack1 := measure()
	b.StopTimer()
	for _, c := range conns {
		c.Close()
	}
	b.ReportMetric(float64(heap1-heap0)/float64(b.N), "heap-B/stream")
	b.ReportMetric(float64(int64(stack1)-int64(stack0))/float64(b.N), "stack-B/stream")
}
