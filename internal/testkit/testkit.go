// Package testkit is what the tests of several packages share: a producer's
// writes of an event stream and producers written raw on a socket, a
// consumer's run read off a connection, loopback connection pairs, the
// streams the benchmarks pump, and the bound of every wait. It imports
// neither relay nor event, so that both their internal tests and
// internal/relaytest can use it.
package testkit

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Liveness bounds waits that only a bug makes long; tests never assert on
// speed, only that something happens at all.
const Liveness = 10 * time.Second

// MinimalInput is the smallest RunAgentInput of a run.
const MinimalInput = `{"threadId":"t1","runId":"r1","protocolVersion":"1.0","messages":[]}`

// RunStarted and RunFinished are the ends of run r1 of thread t1, which
// declares 1.0.
const (
	RunStarted  = `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n"
	RunFinished = `data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n"
)

// ContentEvent is the hot path: most events of a real stream are text
// deltas that need no translation.
const ContentEvent = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"The quick brown fox jumps over the lazy dog. "}` + "\n\n"

// Unusual is a stream with unusual but valid content, in canonical framing.
var Unusual = strings.Join([]string{
	": keep-alive comment before anything\n\n",
	`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n",
	`data: {"type":"TEXT_MESSAGE_START","messageId":"m\u00e9","role":"assistant","zzUnknown":{"deep":[1,2,{"x":null}]}}` + "\n\n",
	`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m\u00e9","delta":"\ud83d\ude00 and 😀 and \u0000 and \\\" and 𝄞"}` + "\n\n",
	": ping\n\n",
	`data: {"type":"CUSTOM","name":"n","value":123456789012345678901234567890.5e-300,"big":-98765432109876543210}` + "\n\n",
	`data: {"type":"FROM_THE_FUTURE","anything":{"goes":true},"timestamp":1e400}` + "\n\n",
	"event: message\nid: 42\ndata: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\\u00e9\"}\n\n",
	`data: {  "type" : "STATE_SNAPSHOT" , "snapshot" : { "k" : [ ] } }` + "\n\n",
	`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}` + "\n\n",
}, "")

// BenchStream is a run of n copies of frame between its RUN_STARTED (which
// declares 1.0) and its RUN_FINISHED.
func BenchStream(n int, frame string) []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"type":"RUN_STARTED","threadId":"t","runId":"r","protocolVersion":"1.0"}` + "\n\n")
	for i := 0; i < n; i++ {
		b.WriteString(frame)
	}
	b.WriteString(`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n\n")
	return b.Bytes()
}

// StreamHeaders answers as a producer's event stream begins.
func StreamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
}

// SSE writes frames as a producer does, flushing after each.
func SSE(w http.ResponseWriter, frames ...string) {
	for _, f := range frames {
		io.WriteString(w, f) //nolint:errcheck
		w.(http.Flusher).Flush()
	}
}

// Post sends body to url with c as a run's JSON, with the extra header
// name/value pairs, and returns the response, failing the test when its
// header does not come within Liveness.
func Post(t testing.TB, c *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	// The wait for the response's header is bounded: a relay that never
	// answers fails the test within Liveness, not at go test's timeout.
	ctx, cancel := context.WithCancel(req.Context())
	headerWait := time.AfterFunc(Liveness, cancel)
	resp, err := c.Do(req.WithContext(ctx))
	if !headerWait.Stop() {
		t.Fatalf("no response header within %v (%v)", Liveness, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// ReadAll reads and closes the answer's body.
func ReadAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the relayed stream: %v", err)
	}
	return string(b)
}

// Await returns the next value of ch, failing the test with failure after
// Liveness.
func Await[T any](t testing.TB, ch <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Liveness):
		t.Fatal(failure)
		var zero T
		return zero
	}
}

// ClosedURL is the URL of a port nothing listens on any more: connecting
// to it is refused.
func ClosedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// TCPPair returns the two ends of a loopback TCP connection, closed when
// the test ends.
func TCPPair(t testing.TB) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan net.Conn, 1)
	go func() {
		c, _ := net.Dial("tcp", ln.Addr().String())
		dialed <- c
	}()
	x, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	y := <-dialed
	if y == nil {
		t.Fatal("dial failed")
	}
	t.Cleanup(func() { x.Close(); y.Close() })
	return x.(*net.TCPConn), y.(*net.TCPConn)
}

// AcceptEach listens on a loopback port for as long as the test runs and
// hands every connection to handle on a goroutine of its own, closing it
// when handle returns. It returns the listener's address (host:port).
func AcceptEach(t testing.TB, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// RawProducer answers each request on its connection with answer(c),
// written straight to the socket, so that the test decides what arrives
// together. It returns the producer's http:// URL.
func RawProducer(t testing.TB, answer func(c net.Conn)) string {
	t.Helper()
	return "http://" + AcceptEach(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body) //nolint:errcheck
			answer(c)
		}
	})
}

// DialConsumer connects to addr as a consumer, for the rest of the test,
// with reads and writes bounded by Liveness.
func DialConsumer(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(Liveness)) //nolint:errcheck
	return c
}

// SendRun writes a run's request with input on c.
func SendRun(t testing.TB, c net.Conn, input string) {
	t.Helper()
	req := "POST / HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
		strconv.Itoa(len(input)) + "\r\n\r\n" + input
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
}

// ReadResponse reads a response from c and the whole of its body.
func ReadResponse(t testing.TB, c net.Conn) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v (%d bytes read)", err, len(b))
	}
	return resp, string(b)
}

// NoAllocs fails the test when a write of an event to w followed by a read
// from r allocates.
func NoAllocs(t testing.TB, w io.Writer, r io.Reader) {
	t.Helper()
	msg, buf := []byte("data: {}\n\n"), make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per write and read", n)
	}
}

// Pumper is a run's stream that pumps the frames a scanner of type S reads
// from src (event.Stream).
type Pumper[S any] interface {
	Pump(sc S, src io.Reader) (readErr, writeErr error)
}

// PumpAll pumps src through st with sc, as the relay does, until src ends
// (at the end of its input or on an error); a write's error fails the test.
func PumpAll[S any](tb testing.TB, st Pumper[S], sc S, src io.Reader) {
	tb.Helper()
	for {
		rerr, werr := st.Pump(sc, src)
		if werr != nil {
			tb.Fatal(werr)
		}
		if rerr != nil {
			return
		}
	}
}

// CanonicalFrame is ev, one "data: ...\n\n" frame, split as the scanner
// splits it when it needs no normalising: the frame's bytes and its data.
func CanonicalFrame(ev string) (raw, data []byte) {
	return []byte(ev), []byte(ev[6 : len(ev)-2])
}

// WaitFor waits until cond holds, checking it every millisecond, and fails
// the test with "never: "+what, and detail's text when given, after
// Liveness.
func WaitFor(t testing.TB, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(Liveness)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if cond() {
				return
			}
			msg := "never: " + what
			for _, d := range detail {
				msg += "\n" + d()
			}
			t.Fatal(msg)
			return
		}
	}
}

// Stacks is the stacks of all goroutines, each a paragraph of its own.
func Stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// GoroutinesIn counts the goroutines whose stack mentions fn (a function's
// name as a stack gives it, such as "wire.(*Poller).loop").
func GoroutinesIn(fn string) int {
	n := 0
	for _, g := range strings.Split(Stacks(), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// Server is a server that serves a listener until it is shut down
// (fasthttp.Server).
type Server interface {
	Serve(ln net.Listener) error
	ShutdownWithContext(ctx context.Context) error
}

// Serve serves srv on a loopback listener, wrapped by wrap (nil: as it
// is), and shuts srv down when the test ends, waiting at most Liveness. It
// returns the listener's address (host:port).
func Serve(t testing.TB, srv Server, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := ln
	if wrap != nil {
		served = wrap(ln)
	}
	go srv.Serve(served) //nolint:errcheck // ends at the shutdown
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Liveness)
		defer cancel()
		srv.ShutdownWithContext(ctx) //nolint:errcheck
	})
	return ln.Addr().String()
}

// Consumer is an HTTP client as a consumer of streams is one (it asks for
// no compression); its idle connections are closed when the test ends.
func Consumer(t testing.TB) *http.Client {
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// ConversationInput is a RunAgentInput some turns into a chat, as its later
// runs send it: 24 messages of a few hundred bytes (user, assistant with a
// tool call, the tool's result; escapes and non-ASCII text), a tool, 11 KB
// in all, declaring 1.0.
func ConversationInput() string {
	var b strings.Builder
	b.WriteString(`{"threadId":"thread-bench","runId":"r1-7","protocolVersion":"1.0","state":{"step":3,"notes":["a","b"]},"messages":[`)
	text := strings.Repeat(`The design notes say the relay walks each input once; \"quoted\" parts and ünïcödé too. `, 4)
	for i := range 8 {
		if i > 0 {
			b.WriteByte(',')
		}
		n := strconv.Itoa(i)
		b.WriteString(`{"id":"u` + n + `","role":"user","content":"` + text + `"},`)
		b.WriteString(`{"id":"a` + n + `","role":"assistant","content":"` + text + `","toolCalls":[{"id":"call-` + n + `","type":"function","function":{"name":"search","arguments":"{\"q\":\"notes ` + n + `\"}"}}]},`)
		b.WriteString(`{"id":"t` + n + `","role":"tool","toolCallId":"call-` + n + `","content":"` + text + `"}`)
	}
	b.WriteString(`],"tools":[{"name":"search","description":"searches the notes","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}],"context":[{"description":"user","value":"bench"}],"forwardedProps":{"k":"v"}}`)
	return b.String()
}
