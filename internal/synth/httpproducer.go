package synth

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPProducer is the synthetic agent written the way most Go agents are,
// on net/http: each run's body is rendered as it goes and written through
// the ResponseWriter in slices of exactly Slice bytes (the last one
// shorter), each flushed, as fast as the consumer takes them. It is the
// producer of the bench's second saturation workload (bench/README), set
// up as an independent harness set up its own; Producer is the bench's
// cheaper one on raw connections. It streams runs at full speed only: a
// paced or idle run is refused with 400.
type HTTPProducer struct {
	// Slice is the size of each write (16 KiB unless set before the first
	// run).
	Slice int
	// Runs and Events count what was sent.
	Runs, Events atomic.Int64

	ln    net.Listener
	srv   *http.Server
	plans planCache
	bufs  sync.Pool
	done  chan struct{}
}

// StartHTTPProducer listens on addr (e.g. "127.0.0.1:0") and serves.
func StartHTTPProducer(addr string) (*HTTPProducer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &HTTPProducer{Slice: 16 << 10, ln: ln, done: make(chan struct{})}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln) //nolint:errcheck // ends with Close
	}()
	return p, nil
}

// Addr is the listening address.
func (p *HTTPProducer) Addr() string { return p.ln.Addr().String() }

// Plan returns the (cached) plan for a dialect, length and mix.
func (p *HTTPProducer) Plan(d Dialect, events int, m Mix) Plan { return p.plans.get(d, events, m) }

// Close stops the producer and ends every connection.
func (p *HTTPProducer) Close() error {
	err := p.srv.Close()
	<-p.done
	return err
}

// maxInput bounds the RunAgentInput the producer reads.
const maxInput = 1 << 20

// ServeHTTP answers a POST with the run its parameters ask for (the query,
// or the body's BodyParamsKey when the query is empty).
func (p *HTTPProducer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxInput+1))
	if err != nil || len(body) > maxInput {
		http.Error(w, "the RunAgentInput could not be read whole (at most 1 MiB)", http.StatusBadRequest)
		return
	}
	rp, err := ParseRunParams(paramsTarget(r.URL.RequestURI(), jsonStringField(body, BodyParamsKey)))
	if err == nil && (rp.Idle || rp.Rate > 0) {
		err = errors.New("this producer streams as fast as it can: no rate, no idle runs")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := p.Runs.Add(1)
	runID := jsonStringField(body, "runId")
	if runID == "" {
		runID = "run-" + strconv.FormatInt(n, 10)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rw := RunWriter{D: rp.Dialect, RunID: runID, Thread: "thread-bench", Delta: rp.Delta}
	flusher, _ := w.(http.Flusher)
	bp, _ := p.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	sent, buf, _ := StreamSlices(w, flusher, p.Plan(rp.Dialect, rp.Events, rp.Mix).Kinds, &rw, p.Slice, (*bp)[:0])
	*bp = buf
	p.bufs.Put(bp)
	p.Events.Add(sent)
}

// StreamSlices writes the events of kinds, rendered through rw as it goes,
// to w in slices of exactly slice bytes (the last one shorter), calling
// f.Flush (when f is not nil) after each. It returns how many events it
// rendered and buf, grown, for the next run; it stops at w's first error.
func StreamSlices(w io.Writer, f http.Flusher, kinds []Kind, rw *RunWriter, slice int, buf []byte) (int64, []byte, error) {
	if slice <= 0 {
		slice = 16 << 10
	}
	var sent int64
	write := func(b []byte) error {
		if _, err := w.Write(b); err != nil {
			return err
		}
		if f != nil {
			f.Flush()
		}
		return nil
	}
	for i, k := range kinds {
		buf = rw.AppendFrame(buf, k, time.Now().UnixNano())
		sent++
		off := 0
		for len(buf)-off >= slice {
			if err := write(buf[off : off+slice]); err != nil {
				return sent, buf[:0], err
			}
			off += slice
		}
		buf = buf[:copy(buf, buf[off:])]
		if i == len(kinds)-1 && len(buf) > 0 {
			if err := write(buf); err != nil {
				return sent, buf[:0], err
			}
			buf = buf[:0]
		}
	}
	return sent, buf, nil
}
