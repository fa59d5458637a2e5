//go:build unix

package relay

import (
	"bufio"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"
)

// The soak (issue #7): many concurrent streams through the relay for a
// while, every event carrying its sequence number and a checksum; nothing
// may be lost, duplicated, reordered or altered, and memory and goroutines
// return to their baseline. TestSoak runs a short one in every go test;
// soak_long_test.go (build tag soak, make soak) runs thousands of streams
// for more than a minute.

type soakConfig struct {
	concurrent int           // streams open at once
	events     int           // events per stream, between RUN_STARTED and RUN_FINISHED
	pace       time.Duration // between a stream's events
	duration   time.Duration // consumers start new streams until then
	legacy     int           // every legacy-th stream is read by a 0.0.45 consumer (translated)
}

type soakResult struct {
	streams, events, lost, duplicated, reordered, corrupt, failed int64
	elapsed                                                       time.Duration
	goroutinesBefore, goroutinesAfter                             int
	heapBefore, heapAfter, heapPeak                               uint64
}

func (r soakResult) String() string {
	return fmt.Sprintf("%d streams, %d events in %v (%.0f events/s); lost %d, duplicated %d, reordered %d, corrupt %d, failed streams %d; "+
		"goroutines %d before, %d after; heap in use %d KiB before, %d KiB at peak, %d KiB after",
		r.streams, r.events, r.elapsed.Round(time.Millisecond), float64(r.events)/r.elapsed.Seconds(), r.lost, r.duplicated, r.reordered, r.corrupt, r.failed,
		r.goroutinesBefore, r.goroutinesAfter, r.heapBefore>>10, r.heapPeak>>10, r.heapAfter>>10)
}

// soakPad varies the events' sizes (and so how they fall into reads).
var soakPad = strings.Repeat("abcdefghij", 40)

// soakEvent is event seq of run: its payload and the checksum over it.
func soakEvent(run string, seq int) string {
	pad := soakPad[:(seq*37)%len(soakPad)]
	sum := crc32.ChecksumIEEE([]byte(run + "/" + strconv.Itoa(seq) + "/" + pad))
	return `{"type":"CUSTOM","name":"soak","value":{"run":"` + run + `","seq":` + strconv.Itoa(seq) + `,"pad":"` + pad + `","sum":` + strconv.FormatUint(uint64(sum), 10) + `}}`
}

// raiseOpenFiles lifts the soft limit on open files to want (or the hard
// limit) and fails when that is not enough.
func raiseOpenFiles(t *testing.T, want uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < want {
		lim.Cur = min(want, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < want {
		t.Fatalf("open files limited to %d, the soak needs %d", lim.Cur, want)
	}
}

func runSoak(t *testing.T, c soakConfig) soakResult {
	// Each stream holds four sockets: the consumer's and the relay's ends
	// of both connections.
	raiseOpenFiles(t, uint64(4*c.concurrent+1000))
	producer := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		run := gjson.GetBytes(b, "runId").Str
		testkit.StreamHeaders(w)
		testkit.SSE(w, `data: {"type":"RUN_STARTED","threadId":"soak","runId":"`+run+`","protocolVersion":"1.0"}`+"\n\n")
		for i := range c.events {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(c.pace):
			}
			testkit.SSE(w, "data: "+soakEvent(run, i)+"\n\n")
		}
		testkit.SSE(w, `data: {"type":"RUN_FINISHED","threadId":"soak","runId":"`+run+`"}`+"\n\n")
	})}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go producer.Serve(pln) //nolint:errcheck
	defer producer.Close()

	var reported atomic.Int64
	r := &Relay{
		Upstream: "http://" + pln.Addr().String(),
		// Idle producer connections close soon, so that the goroutines
		// reading them are gone when the baseline is checked.
		Client:          NewClient(ClientOptions{MaxConns: 2 * c.concurrent, MaxIdleConnDuration: 500 * time.Millisecond}),
		Log:             zap.NewNop(),
		Tap:             onEnd(nil, func(*RunReport) { reported.Add(1) }),
		Poller:          testPoller(t),
		ReuseGoroutines: true,
	}
	srv := r.Server()
	// Idle fasthttp workers otherwise linger 10s before the goroutine
	// count can return to its baseline.
	srv.MaxIdleWorkerDuration = time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(Listener(ln)) //nolint:errcheck
	defer srv.Shutdown()
	url := "http://" + ln.Addr().String() + "/agent"
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: -1}
	client := &http.Client{Transport: tr}

	var res soakResult
	// One stream first, so that the servers' own goroutines (accept loops,
	// worker pool cleaners) are running when the baseline is taken.
	if _, err := soakStream(context.Background(), client, url, "warm-up", "1.0", c.events, &res); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.goroutinesBefore, res.heapBefore = runtime.NumGoroutine(), ms.HeapInuse
	reported.Store(0)

	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(time.Second):
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.duration+time.Duration(c.events)*c.pace+time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range c.concurrent {
		wg.Go(func() {
			for time.Since(start) < c.duration && ctx.Err() == nil {
				n := next.Add(1)
				run := "run-" + strconv.FormatInt(n, 10)
				consumer := "1.0"
				if c.legacy > 0 && n%int64(c.legacy) == 0 {
					consumer = "0.0.45"
				}
				got, err := soakStream(ctx, client, url, run, consumer, c.events, &res)
				atomic.AddInt64(&res.streams, 1)
				atomic.AddInt64(&res.events, int64(got))
				if err != nil {
					atomic.AddInt64(&res.failed, 1)
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s (consumer %s): %w", run, consumer, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(stopSampling)
	res.heapPeak = peak.Load()
	if firstErr != nil {
		t.Errorf("first failure: %v", firstErr)
	}

	// Back to the baseline: no run tracked, every run reported,
	// goroutines and heap as before.
	tr.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for r.Active() > 0 || reported.Load() != res.streams || runtime.NumGoroutine() > res.goroutinesBefore {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("after the soak: %d runs active, %d of %d reported, %d goroutines (baseline %d)\n%s",
				r.Active(), reported.Load(), res.streams, runtime.NumGoroutine(), res.goroutinesBefore, buf[:runtime.Stack(buf, true)])
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	runtime.GC()
	runtime.GC() // the second empties the sync.Pools' victim caches
	runtime.ReadMemStats(&ms)
	res.goroutinesAfter, res.heapAfter = runtime.NumGoroutine(), ms.HeapInuse
	t.Log(res)
	if res.lost+res.duplicated+res.reordered+res.corrupt+res.failed != 0 {
		t.Errorf("the soak lost or altered events: %v", res)
	}
	if res.heapAfter > res.heapBefore+32<<20 {
		t.Errorf("heap in use %d KiB after the soak, %d KiB before", res.heapAfter>>10, res.heapBefore>>10)
	}
	return res
}

// soakStream runs one stream and checks every event: RUN_STARTED first,
// then events 0..n-1 in order, each byte for byte as sent and with its
// checksum, then RUN_FINISHED, then the end. It returns how many events
// arrived.
func soakStream(ctx context.Context, client *http.Client, url, run, consumer string, n int, res *soakResult) (int, error) {
	body := `{"threadId":"soak","runId":"` + run + `","messages":[],"tools":[],"context":[],"protocolVersion":"` + consumer + `"}`
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	got, want := 0, 0
	var types []string
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			return got, err
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
		if !ok {
			continue
		}
		got++
		ev := gjson.Parse(data)
		typ := ev.Get("type").Str
		types = append(types, typ)
		if typ != "CUSTOM" {
			continue
		}
		v := ev.Get("value")
		seq := int(v.Get("seq").Int())
		sum := crc32.ChecksumIEEE([]byte(v.Get("run").Str + "/" + strconv.Itoa(seq) + "/" + v.Get("pad").Str))
		switch {
		case v.Get("run").Str != run || uint64(sum) != v.Get("sum").Uint() || data != soakEvent(run, seq):
			atomic.AddInt64(&res.corrupt, 1)
		case seq < want:
			atomic.AddInt64(&res.duplicated, 1)
		case seq > want:
			atomic.AddInt64(&res.reordered, 1)
			atomic.AddInt64(&res.lost, int64(seq-want))
			want = seq + 1
		default:
			want++
		}
	}
	if want < n {
		atomic.AddInt64(&res.lost, int64(n-want))
	}
	if len(types) < 2 || types[0] != "RUN_STARTED" || types[len(types)-1] != "RUN_FINISHED" {
		return got, fmt.Errorf("stream of %d events from %v to %v", len(types), types[:min(1, len(types))], types[max(0, len(types)-1):])
	}
	return got, nil
}

// TestSoak is the short soak every go test runs: a few hundred concurrent
// streams for a few seconds, the same code as the long one.
func TestSoak(t *testing.T) {
	res := runSoak(t, soakConfig{concurrent: 300, events: 40, pace: 20 * time.Millisecond, duration: 4 * time.Second, legacy: 4})
	if res.streams < 300 || res.events < res.streams*40 {
		t.Errorf("the soak ran too little: %v", res)
	}
}
