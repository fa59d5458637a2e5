package synth

import (
	"io"
	"time"
)

// Writer is where Stream writes a run: Write buffers, Flush sends what has
// been buffered (a bufio.Writer, or the producer's chunk writer).
type Writer interface {
	io.Writer
	Flush() error
}

// Stream writes the events of kinds through rw to w and returns how many it
// wrote. With interval 0 it writes as fast as w takes them, flushing every
// flushBytes bytes and after the last event; otherwise event i is written
// and flushed at start+i·interval (Go's timers: about a millisecond of
// jitter on an idle process; the Producer's pacer is finer). It stops at
// the first error of w, a consumer gone.
func Stream(w Writer, kinds []Kind, rw *RunWriter, interval time.Duration, flushBytes int) (int64, error) {
	var buf []byte
	start := time.Now()
	var sent int64
	for i, k := range kinds {
		if interval > 0 && i > 0 {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
		}
		buf = rw.AppendFrame(buf, k, time.Now().UnixNano())
		sent++
		if interval > 0 || len(buf) >= flushBytes || i == len(kinds)-1 {
			if _, err := w.Write(buf); err != nil {
				return sent, err
			}
			buf = buf[:0]
			if err := w.Flush(); err != nil {
				return sent, err
			}
		}
	}
	return sent, nil
}
