package relay

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// BenchmarkBodiesHeldMemory measures what request bodies cost the relay's
// memory at the default limits (--max-body 64 MiB, --max-bodies-in-flight
// 256 MiB), per scenario (one op):
//
//   - held-heads: 16 connections each send a header of Content-Length 64 MiB
//     and one byte, and hold it (issue #39: four of them took RSS from 24
//     to 287 MB, fasthttp having allocated each body whole from its header);
//   - uploads: 100 consumers upload 1 MB chunked bodies at once.
//
// It reports the peak growth of the heap's objects (sampled each
// millisecond through runtime/metrics, which does not stop the world) and,
// on Linux, of the process's resident set (VmHWM, reset before each op
// through /proc/self/clear_refs). The producer reads the bodies into
// nothing, and the consumers send them from one shared buffer, so that
// what grows is the relay's. Run it alone, on a quiet machine:
//
//	go test ./relay -run '^$' -bench BenchmarkBodiesHeldMemory -benchtime 3x
func BenchmarkBodiesHeldMemory(b *testing.B) {
	producer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		testkit.StreamHeaders(w)
		testkit.SSE(w, testkit.RunStarted, testkit.RunFinished)
	}))
	defer producer.Close()
	r := &Relay{Upstream: producer.URL}
	addr := testkit.Serve(b, r.Server(), Listener)
	defer r.EndRuns()

	b.Run("held-heads", func(b *testing.B) {
		const attackers = 16
		measure(b, func(sample func()) {
			conns := make([]net.Conn, 0, attackers)
			for range attackers {
				before := r.bodies.inFlight()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				io.WriteString(c, runHeader("Content-Length: 67108864\r\n")+"{") //nolint:errcheck
				conns = append(conns, c)
				// Held once its body is read (a claim made), or refused.
				testkit.WaitFor(b, "the attacker's body read", func() bool { return r.bodies.inFlight() > before || refused(c) })
			}
			sample() // every header held
			for _, c := range conns {
				c.Close()
			}
			testkit.WaitFor(b, "the bodies given back", func() bool { return r.bodies.inFlight() == 0 })
		})
	})

	b.Run("uploads", func(b *testing.B) {
		const uploads, size = 100, 1 << 20
		pad := bytes.Repeat([]byte("x"), 64<<10)
		measure(b, func(func()) {
			var wg sync.WaitGroup
			for i := range uploads {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if status, _, err := upload(addr, "upload-"+strconv.Itoa(i), pad, size/len(pad)); status != 200 {
						b.Errorf("upload %d: %d %v", i, status, err)
					}
				}()
			}
			wg.Wait()
		})
	})
}

// refused reports whether c was answered already (a refusal): a read that
// waits a millisecond finds bytes or the connection's end (one whose
// deadline has passed would not look).
func refused(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(time.Millisecond)) //nolint:errcheck
	var one [1]byte
	n, err := c.Read(one[:])
	c.SetReadDeadline(time.Time{}) //nolint:errcheck
	return n > 0 || err == io.EOF
}

// upload sends a run of runId id whose body is chunked, pads chunks of
// pad around it, and returns the response's status and body.
func upload(addr, id string, pad []byte, pads int) (status int, body string, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * testkit.Liveness)) //nolint:errcheck
	go func() {
		w := bufio.NewWriterSize(c, 64<<10)
		io.WriteString(w, runHeader("Transfer-Encoding: chunked\r\nConnection: close\r\n")+chunk(`{"threadId":"t","runId":"`+id+`","protocolVersion":"1.0","messages":[],"forwardedProps":{"pad":"`)) //nolint:errcheck
		for range pads {
			io.WriteString(w, strconv.FormatInt(int64(len(pad)), 16)+"\r\n") //nolint:errcheck
			w.Write(pad)                                                     //nolint:errcheck
			io.WriteString(w, "\r\n")                                        //nolint:errcheck
		}
		io.WriteString(w, chunk(`"}}`)+"0\r\n\r\n") //nolint:errcheck
		w.Flush()                                   //nolint:errcheck
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// measure runs scenario b.N times and reports the largest peak growth of
// the heap's objects and of the resident set over one run of it. The
// heap is sampled each millisecond, and when the scenario calls sample.
func measure(b *testing.B, scenario func(sample func())) {
	var heapPeak, rssPeak float64
	for range b.N {
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		heap0 := sample[0].Value.Uint64()
		rss0, rssOK := resetPeakRSS()
		var mu sync.Mutex
		peak := heap0
		read := func() {
			mu.Lock()
			defer mu.Unlock()
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				read()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		scenario(read)
		close(stop)
		<-done
		heapPeak = max(heapPeak, float64(peak-heap0)/(1<<20))
		if hwm, ok := statusKiB("VmHWM:"); ok && rssOK {
			rssPeak = max(rssPeak, float64(hwm-rss0)/(1<<10))
		}
	}
	b.ReportMetric(heapPeak, "peak-heap-MiB")
	b.ReportMetric(rssPeak, "peak-rss-MiB")
}

// resetPeakRSS resets the process's peak resident set (VmHWM) to its
// resident set now, and returns that, in KiB; ok=false off Linux.
func resetPeakRSS() (kib int64, ok bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return statusKiB("VmRSS:")
}

// statusKiB reads a "kB" line of /proc/self/status.
func statusKiB(key string) (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			n, err := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
