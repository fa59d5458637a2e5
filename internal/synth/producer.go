package synth

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agui-relay/agui-relay/internal/wire"
)

// Producer is the synthetic AG-UI agent: a minimal HTTP/1.1 server that
// answers every POST with a chunked event stream. It is written on raw
// connections so that its own cost stays small and each flush is exactly
// one chunk and one write(2).
type Producer struct {
	ln net.Listener
	// FlushBytes is how many bytes the producer buffers before a write when
	// it streams as fast as possible; paced streams flush every event.
	FlushBytes int

	mu      sync.Mutex
	release chan struct{}
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	closed  atomic.Bool

	// Runs and Events count what was sent.
	Runs, Events atomic.Int64
	// IdleOpen counts idle runs waiting for release.
	IdleOpen atomic.Int64

	plans planCache

	pacerOnce sync.Once
	pc        *pacer
}

func (p *Producer) pacer() *pacer {
	p.pacerOnce.Do(func() {
		p.pc = &pacer{wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
		p.pc.fine, _ = newFineTimer() // without it, Go's coarser timers
		go p.pc.run()
	})
	return p.pc
}

type planKey struct {
	d Dialect
	n int
	m Mix
}

// planCache holds the plans asked for so far; the zero value is ready.
type planCache struct {
	mu    sync.Mutex
	plans map[planKey]Plan
}

func (c *planCache) get(d Dialect, events int, m Mix) Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := planKey{d, events, m}
	pl, ok := c.plans[k]
	if !ok {
		if c.plans == nil {
			c.plans = map[planKey]Plan{}
		}
		pl = NewMixedPlan(d, events, m)
		c.plans[k] = pl
	}
	return pl
}

// StartProducer listens on addr (e.g. "127.0.0.1:0") and serves.
func StartProducer(addr string) (*Producer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Producer{ln: ln, FlushBytes: 16 << 10, release: make(chan struct{}),
		conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the listening address.
func (p *Producer) Addr() string { return p.ln.Addr().String() }

// Plan returns the (cached) plan for a dialect, length and mix.
func (p *Producer) Plan(d Dialect, events int, m Mix) Plan { return p.plans.get(d, events, m) }

// ReleaseIdle ends every idle run open now with RUN_FINISHED.
func (p *Producer) ReleaseIdle() {
	p.mu.Lock()
	close(p.release)
	p.release = make(chan struct{})
	p.mu.Unlock()
}

func (p *Producer) releaseChan() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.release
}

// Close stops the producer and ends every connection.
func (p *Producer) Close() error {
	p.closed.Store(true)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ReleaseIdle()
	p.wg.Wait()
	// Every paced run has ended with its connection (the pacer's write
	// failed), so the pacer holds none.
	p.pacerOnce.Do(func() {})
	if p.pc != nil {
		p.pc.close()
	}
	return err
}

func (p *Producer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Producer) serve(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 8<<10)
	cw := &chunkWriter{c: c}
	for {
		req, err := readRequest(br)
		if err != nil {
			return
		}
		if req.method != "POST" {
			cw.writeRaw([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
			if cw.err != nil {
				return
			}
			continue
		}
		rp, err := ParseRunParams(req.paramsTarget())
		if err != nil {
			msg := err.Error()
			cw.writeRaw([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n" + msg))
			continue
		}
		if !p.stream(cw, rp, req.runID) || req.close {
			return
		}
	}
}

// stream writes one run; it reports whether the connection may be reused.
func (p *Producer) stream(cw *chunkWriter, rp RunParams, runID string) bool {
	p.Runs.Add(1)
	cw.begin()
	cw.buf = append(cw.buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	cw.headerDone()
	if runID == "" {
		runID = "run-" + strconv.FormatInt(p.Runs.Load(), 10)
	}
	w := RunWriter{D: rp.Dialect, RunID: runID, Thread: "thread-bench", Delta: rp.Delta}
	if rp.Idle {
		return p.idle(cw, &w)
	}
	kinds := p.Plan(rp.Dialect, rp.Events, rp.Mix).Kinds
	if rp.Rate > 0 {
		// Paced: the first event now, the rest from the pacer.
		interval := time.Duration(float64(time.Second) / rp.Rate)
		cw.buf = w.AppendFrame(cw.buf, kinds[0], time.Now().UnixNano())
		if err := cw.flush(); err != nil {
			return false
		}
		job := &pacedJob{cw: cw, w: &w, kinds: kinds, i: 1, start: time.Now(), interval: interval, done: make(chan error, 1)}
		p.pacer().add(job, job.start.Add(interval))
		err := <-job.done
		p.Events.Add(int64(job.i))
		if err != nil {
			return false
		}
		cw.writeRaw([]byte("0\r\n\r\n"))
		return cw.err == nil
	}
	sent, err := Stream(cw, kinds, &w, 0, p.FlushBytes)
	p.Events.Add(sent)
	if err != nil {
		return false
	}
	cw.writeRaw([]byte("0\r\n\r\n"))
	return cw.err == nil
}

// idle writes RUN_STARTED, waits for ReleaseIdle, then writes RUN_FINISHED.
func (p *Producer) idle(cw *chunkWriter, w *RunWriter) bool {
	cw.buf = w.AppendFrame(cw.buf, KRunStarted, time.Now().UnixNano())
	// Counted before the flush: once the consumer sees the run open, the
	// producer's count must already include it.
	p.IdleOpen.Add(1)
	if err := cw.flush(); err != nil {
		p.IdleOpen.Add(-1)
		return false
	}
	ch := p.releaseChan()
	<-ch
	p.IdleOpen.Add(-1)
	if p.closed.Load() {
		return false
	}
	cw.buf = w.AppendFrame(cw.buf, KRunFinished, time.Now().UnixNano())
	p.Events.Add(2)
	if cw.flush() != nil {
		return false
	}
	cw.writeRaw([]byte("0\r\n\r\n"))
	return cw.err == nil
}

// chunkWriter frames what is buffered as one HTTP/1.1 chunk per flush. The
// chunk header goes into room reserved at the front of the buffer, so each
// flush is a single write.
type chunkWriter struct {
	c    net.Conn
	buf  []byte
	head []byte // response header to send with the first chunk
	err  error
}

const chunkRoom = 10 // "ffffffff\r\n"

func (cw *chunkWriter) begin() {
	cw.buf = cw.buf[:0]
	cw.head = cw.head[:0]
}

// headerDone moves what was appended to buf into head: it is sent with the
// first chunk.
func (cw *chunkWriter) headerDone() {
	cw.head = append(cw.head, cw.buf...)
	cw.buf = append(cw.buf[:0], make([]byte, chunkRoom)...)
}

func (cw *chunkWriter) flush() error {
	if cw.err != nil {
		return cw.err
	}
	n := len(cw.buf) - chunkRoom
	if n <= 0 {
		return nil
	}
	var hx [16]byte
	h := strconv.AppendInt(hx[:0], int64(n), 16)
	h = append(h, '\r', '\n')
	off := chunkRoom - len(h)
	copy(cw.buf[off:], h)
	cw.buf = append(cw.buf, '\r', '\n')
	out := cw.buf[off:]
	if len(cw.head) > 0 {
		out = append(cw.head, out...)
		cw.head = cw.head[:0]
	}
	_, cw.err = cw.c.Write(out)
	cw.buf = cw.buf[:chunkRoom]
	return cw.err
}

// Write buffers b for the next chunk (Stream's Writer).
func (cw *chunkWriter) Write(b []byte) (int, error) {
	cw.buf = append(cw.buf, b...)
	return len(b), cw.err
}

// Flush sends what is buffered as one chunk (Stream's Writer).
func (cw *chunkWriter) Flush() error { return cw.flush() }

func (cw *chunkWriter) writeRaw(b []byte) {
	if cw.err != nil {
		return
	}
	if len(cw.head) > 0 {
		b = append(cw.head, b...)
		cw.head = cw.head[:0]
	}
	_, cw.err = cw.c.Write(b)
}

type request struct {
	method, target string
	close          bool
	runID          string
	bodyQuery      string // forwardedProps.aguibench (BodyParamsKey)
}

// BodyParamsKey names the string member of a RunAgentInput's
// forwardedProps that carries a run's parameters as a query string
// ("dialect=1.0&events=1000&rate=0"), for proxies that post every run to
// one fixed URL (the CopilotKit runtime's HttpAgent). The producers read
// it when the request's target has no query.
const BodyParamsKey = "aguibench"

// paramsTarget is the target the run's parameters are read from: the
// request's, or, when it has no query, its body's BodyParamsKey.
func (r request) paramsTarget() string { return paramsTarget(r.target, r.bodyQuery) }

func paramsTarget(target, bodyQuery string) string {
	if bodyQuery == "" || strings.Contains(target, "?") {
		return target
	}
	return "/run?" + bodyQuery
}

var errBadRequest = errors.New("malformed request")

// readRequest reads one HTTP/1.1 request and its body (Content-Length or
// chunked), keeping only what the producer uses.
func readRequest(br *bufio.Reader) (request, error) {
	var r request
	line, err := br.ReadSlice('\n')
	if err != nil {
		return r, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return r, errBadRequest
	}
	r.method, r.target = string(f[0]), string(f[1])
	clen, chunked := 0, false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return r, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, errBadRequest
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if clen, err = strconv.Atoi(string(v)); err != nil {
				return r, errBadRequest
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			r.close = bytes.EqualFold(v, []byte("close"))
		}
	}
	var body []byte
	if chunked {
		body, err = readChunked(br)
	} else if clen > 0 {
		body = make([]byte, clen)
		_, err = io.ReadFull(br, body)
	}
	if err != nil {
		return r, err
	}
	r.runID = jsonStringField(body, "runId")
	r.bodyQuery = jsonStringField(body, BodyParamsKey)
	return r, nil
}

// readChunked reads a chunked request body from br (wire.Framing, as the
// relay reads a producer's answer), leaving what follows it in br.
func readChunked(br *bufio.Reader) ([]byte, error) {
	var body []byte
	framing := wire.NewFraming(-1)
	for !framing.Done() {
		if _, err := br.Peek(1); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return body, err
		}
		p, _ := br.Peek(br.Buffered())
		n, err := framing.Decode(p) // p is discarded below, but for the next request's start
		if err != nil {
			return body, err
		}
		body = append(body, p[:n]...)
		br.Discard(len(p) - framing.Rest())
	}
	return body, nil
}

// jsonStringField finds "key":"value" in a flat JSON document without
// decoding it (the RunAgentInput the bench sends is compact and ASCII).
func jsonStringField(doc []byte, key string) string {
	pat := []byte(`"` + key + `":"`)
	i := bytes.Index(doc, pat)
	if i < 0 {
		pat = []byte(`"` + key + `": "`)
		if i = bytes.Index(doc, pat); i < 0 {
			return ""
		}
	}
	rest := doc[i+len(pat):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 128 {
		return ""
	}
	return string(rest[:j])
}

// pacer writes the events of every paced run at their due time, from one
// goroutine, so that runs at a rate send their events evenly spread. Go's
// timers sleep in whole milliseconds when the process is otherwise idle
// (time.Sleep(200µs) takes about 1.1 ms): a goroutine per stream sleeping
// between events would wake streams in bunches at each millisecond and
// send them as bursts. The pacer sleeps short waits on a fineTimer instead.
type pacer struct {
	mu      sync.Mutex
	h       pacedHeap
	stopped bool
	wake    chan struct{}
	stop    chan struct{}
	exited  chan struct{}
	fine    *fineTimer // nil: short waits on Go's timers
}

type pacedJob struct {
	cw       *chunkWriter
	w        *RunWriter
	kinds    []Kind
	i        int // next event
	start    time.Time
	interval time.Duration
	done     chan error
}

type pacedItem struct {
	due time.Time
	job *pacedJob
}

// pacedHeap is a min-heap on due.
type pacedHeap []pacedItem

func (h *pacedHeap) push(it pacedItem) {
	*h = append(*h, it)
	a := *h
	for i := len(a) - 1; i > 0; {
		parent := (i - 1) / 2
		if !a[i].due.Before(a[parent].due) {
			break
		}
		a[i], a[parent] = a[parent], a[i]
		i = parent
	}
}

func (h *pacedHeap) pop() pacedItem {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a[l].due.Before(a[m].due) {
			m = l
		}
		if r < len(a) && a[r].due.Before(a[m].due) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func (pc *pacer) add(j *pacedJob, due time.Time) {
	pc.mu.Lock()
	if pc.stopped {
		pc.mu.Unlock()
		j.done <- errPacerStopped
		return
	}
	pc.h.push(pacedItem{due, j})
	pc.mu.Unlock()
	select {
	case pc.wake <- struct{}{}:
	default:
	}
}

var errPacerStopped = errors.New("the producer is closed")

// close stops the pacer, failing the runs it still holds, and returns
// once its goroutine has ended.
func (pc *pacer) close() {
	pc.mu.Lock()
	if pc.stopped {
		pc.mu.Unlock()
		return
	}
	pc.stopped = true
	close(pc.stop)
	pc.mu.Unlock()
	<-pc.exited
	if pc.fine != nil {
		pc.fine.Close()
	}
	for len(pc.h) > 0 {
		pc.h.pop().job.done <- errPacerStopped
	}
}

func (pc *pacer) run() {
	defer close(pc.exited)
	for {
		pc.mu.Lock()
		if pc.stopped {
			pc.mu.Unlock()
			return
		}
		if len(pc.h) == 0 {
			pc.mu.Unlock()
			select {
			case <-pc.wake:
			case <-pc.stop:
			}
			continue
		}
		top := pc.h[0]
		if d := time.Until(top.due); d > 0 {
			pc.mu.Unlock()
			if d > 2*time.Millisecond || pc.fine == nil {
				// Long waits on a timer; a new earlier run wakes us.
				t := time.NewTimer(max(d-time.Millisecond, d/2))
				select {
				case <-t.C:
				case <-pc.wake:
					t.Stop()
				case <-pc.stop:
					t.Stop()
				}
			} else {
				// A run added meanwhile is due an interval from now, after
				// this wait.
				if pc.fine.sleep(d) != nil {
					time.Sleep(d)
				}
			}
			continue
		}
		pc.h.pop()
		pc.mu.Unlock()
		j := top.job
		// A stalled peer must not hold up every other stream.
		j.cw.c.SetWriteDeadline(time.Now().Add(time.Second))
		j.cw.buf = j.w.AppendFrame(j.cw.buf, j.kinds[j.i], time.Now().UnixNano())
		err := j.cw.flush()
		j.cw.c.SetWriteDeadline(time.Time{})
		j.i++
		if err != nil || j.i == len(j.kinds) {
			j.done <- err
			continue
		}
		pc.add(j, j.start.Add(time.Duration(j.i)*j.interval))
	}
}
