package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/agui-relay/agui-relay/internal/load"
)

// runsFile is --out's runs.jsonl: one JSON line per run, as vegeta's
// results or hey's CSV, written as the runs end.
type runsFile struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	err    error
	closed bool
}

// runLine is one line of runs.jsonl: the run's record with where it ran.
type runLine struct {
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	Round       int    `json:"round"`
	load.RunRecord
}

func openRuns(dir string) (*runsFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		return nil, err
	}
	return &runsFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// recorder returns the load.Config.Record of one load.
func (r *runsFile) recorder(target string, concurrency, round int) func(load.RunRecord) {
	return func(rec load.RunRecord) {
		b, err := json.Marshal(runLine{Target: target, Concurrency: concurrency, Round: round, RunRecord: rec})
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err == nil && !r.closed {
			if err == nil {
				b = append(b, '\n')
				_, err = r.w.Write(b)
			}
			r.err = err
		}
	}
}

// close flushes and closes the file once; it returns the first error.
func (r *runsFile) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	if err := r.w.Flush(); r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	return r.err
}
