//go:build unix

package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/metrics"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/tracing"
)

// BenchmarkShortRun measures whole short runs through the relay as serve
// runs it (a Router's Server on the relay's Listener, a Poller, the
// default client, consumers read as 1.0, as the bench starts it), over
// real loopback sockets: a consumer on one kept-alive connection posts a
// run, reads its response to the end and posts the next; the producer, on
// raw sockets, answers each POST with a chunked text/event-stream of five
// events (RUN_STARTED, three TEXT_MESSAGE_CONTENT, RUN_FINISHED) in one
// write, as a producer writing at full speed does. "tapped" adds the
// metrics' tap, which serve installs by default; "traced" adds tracing's
// too (every run sampled, its SERVER and CLIENT spans exported in batches
// to a collector on loopback that discards them), so that tracing's cost
// per run is tapped against traced in one run:
//
//	go test -run '^$' -bench 'ShortRun/(tapped|traced)$' -benchtime 20000x -count 10 ./relay/
//
// It reports the process's CPU per run (user and system, getrusage around
// the loop: the consumer's and the producer's share included, both a
// read and a write a run), allocations and bytes per run. ns/op is wall
// clock on a shared machine: compare cpu-ns/run, at a fixed -benchtime.
//
//	go test -run '^$' -bench ShortRun -benchtime 20000x ./relay/
//
// "40conns" runs them over 40 connections at once, as issue #23's harness
// does (40 workers, each making runs one after another on a persistent
// connection): b.N runs in all. "translating" relays the same runs to a
// consumer configured as 0.0.45 whose input declares no version, so that
// every run is translated (its RUN_STARTED loses protocolVersion), as the
// bench's "agui-relay 1.0→0.0.45" case: what a translated run costs beyond
// a relayed one.
func BenchmarkShortRun(b *testing.B) {
	for _, taps := range []shortRunTaps{untapped, tapped, traced} {
		b.Run(taps.String(), func(b *testing.B) { benchShortRuns(b, taps, 1, negotiate.Current) })
	}
	b.Run("untapped/40conns", func(b *testing.B) { benchShortRuns(b, untapped, 40, negotiate.Current) })
	b.Run("translating", func(b *testing.B) { benchShortRuns(b, untapped, 1, negotiate.MustParse("0.0.45")) })
}

// shortRunTaps are the taps of BenchmarkShortRun's relay.
type shortRunTaps int

const (
	untapped shortRunTaps = iota
	tapped                // the metrics'
	traced                // the metrics' and tracing's
)

func (t shortRunTaps) String() string { return [...]string{"untapped", "tapped", "traced"}[t] }

// tracer returns a Tracer exporting to a collector on loopback that
// discards what it receives, shut down at the benchmark's end.
func tracer(b *testing.B) *tracing.Tracer {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
	}))
	b.Cleanup(collector.Close)
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"} {
		b.Setenv(k, "")
	}
	tr, err := tracing.New(context.Background(), tracing.Options{Endpoint: collector.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck
	return tr
}

// BenchmarkShortRunUpstreamReuse measures what --upstream-reuse never
// costs a short run beside always (the default), in one run of the
// benchmark: BenchmarkShortRun's "untapped" runs, the producer's
// connection kept alive for the next run, or a new one for each run, asked to
// close after its response.
//
//	go test -run '^$' -bench ShortRunUpstreamReuse -benchtime 20000x -count 6 ./relay/
//
// Compare cpu-ns/run and allocations. Each run of "never" leaves a socket
// in TIME_WAIT on the relay's side (it closes first); loopback reuses
// them (net.ipv4.tcp_tw_reuse).
func BenchmarkShortRunUpstreamReuse(b *testing.B) {
	for _, noReuse := range []bool{false, true} {
		name := map[bool]string{false: "always", true: "never"}[noReuse]
		b.Run(name, func(b *testing.B) {
			benchShortRuns(b, untapped, 1, negotiate.Current, func(r *relay.Relay) {
				r.Client = relay.NewClient(relay.ClientOptions{Log: zap.NewNop(), NoReuse: noReuse})
			})
		})
	}
}

const shortRunInput = `{"threadId":"thread-0123456789","runId":"run-0123456789","protocolVersion":"1.0","state":{},"messages":[{"id":"u1","role":"user","content":"Hello! What can you do?"}],"tools":[],"context":[],"forwardedProps":{}}`

// shortRunResponse is the producer's whole response to a run.
func shortRunResponse() []byte {
	var events bytes.Buffer
	events.WriteString(`data: {"type":"RUN_STARTED","threadId":"thread-0123456789","runId":"run-0123456789","protocolVersion":"1.0"}` + "\n\n")
	for range 3 {
		events.WriteString(`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"The quick brown fox jumps over the lazy dog. "}` + "\n\n")
	}
	events.WriteString(`data: {"type":"RUN_FINISHED","threadId":"thread-0123456789","runId":"run-0123456789"}` + "\n\n")
	out := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
	out = strconv.AppendInt(out, int64(events.Len()), 16)
	out = append(out, "\r\n"...)
	out = append(out, events.Bytes()...)
	return append(out, "\r\n0\r\n\r\n"...)
}

// shortRunProducer answers every POST on its connections with resp.
func shortRunProducer(b *testing.B, resp []byte) string {
	return testkit.AcceptEach(b, func(c net.Conn) {
		br := bufio.NewReaderSize(c, 4<<10)
		for readRequest(br) == nil {
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	})
}

// readRequest reads one request, its header and its Content-Length body.
func readRequest(br *bufio.Reader) error {
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return err
			}
		}
	}
	_, err := br.Discard(n)
	return err
}

func benchShortRuns(b *testing.B, taps shortRunTaps, conns int, consumer negotiate.Version, configure ...func(*relay.Relay)) {
	resp := shortRunResponse()
	upstream := shortRunProducer(b, resp)
	poller := relay.NewPoller()
	b.Cleanup(func() { poller.Close() })
	rl := &relay.Relay{
		Upstream:        "http://" + upstream,
		Route:           "default",
		ConsumerVersion: consumer,
		Log:             zap.NewNop(),
		Poller:          poller,
		ReuseGoroutines: true,
	}
	switch taps {
	case tapped:
		rl.Tap = metrics.New(metrics.Options{}).Tap
	case traced:
		mets, tr := metrics.New(metrics.Options{}), tracer(b)
		rl.Tap = func(rep *relay.RunReport) relay.RunTap { return relay.JoinTaps(mets.Tap(rep), tr.Tap(rep)) }
		rl.RequestTap, rl.RoutePrefix = tr.RequestTap, "/"
	}
	for _, c := range configure {
		c(rl)
	}
	table, err := relay.NewTable([]relay.Route{{Name: "default", Prefix: "/", Relay: rl}})
	if err != nil {
		b.Fatal(err)
	}
	router := relay.NewRouter(table, 0, zap.NewNop())
	addr := testkit.Serve(b, router.Server(), relay.Listener)

	input := shortRunInput
	if consumer != negotiate.Current {
		// An input that declares no version, as 0.0.x consumers send: a
		// declared one would be taken at its word over the configured one.
		input = strings.Replace(input, `"protocolVersion":"1.0",`, "", 1)
	}
	req := []byte("POST /agent HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
		strconv.Itoa(len(input)) + "\r\n\r\n" + input)
	clients := make([]func() error, conns)
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, 16<<10)
		clients[i] = func() error {
			if _, err := c.Write(req); err != nil {
				return err
			}
			return readResponse(c, buf)
		}
	}
	runs := func(n int) {
		var wg sync.WaitGroup
		errs := make(chan error, len(clients))
		for i, run := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := i; k < n; k += len(clients) {
					if err := run(); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	runs(200 * conns) // the pools, the connections to the producer, the stacks
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testkit.CPUTime()
	runs(b.N)
	b.StopTimer()
	b.ReportMetric(float64(testkit.CPUTime()-cpu0)/float64(b.N), "cpu-ns/run")
}

// readResponse reads one response of the relay, up to the end of its chunked
// body, and checks that the run's last event came.
func readResponse(c net.Conn, buf []byte) error {
	n := 0
	for {
		m, err := c.Read(buf[n:])
		if err != nil {
			return err
		}
		n += m
		if bytes.HasSuffix(buf[:n], []byte("\r\n0\r\n\r\n")) {
			break
		}
		if n == len(buf) {
			return errors.New("response too long")
		}
	}
	if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) || !bytes.Contains(buf[:n], []byte(`"RUN_FINISHED"`)) {
		return errors.New("unexpected response: " + string(buf[:n]))
	}
	return nil
}
