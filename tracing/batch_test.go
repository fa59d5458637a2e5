package tracing

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batches is an exporter that sends the size of each batch it is given
// on sizes; with release, it first says it started, and waits for
// release.
type batches struct {
	sizes   chan int
	started chan struct{}
	release chan struct{} // nil: none awaited
	mu      sync.Mutex
	shut    bool
}

func (e *batches) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.release != nil {
		e.started <- struct{}{}
		<-e.release
	}
	e.sizes <- len(spans)
	return nil
}

func (e *batches) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shut = true
	return nil
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	tr := tp.Tracer("test")
	for range n {
		_, s := tr.Start(context.Background(), "span")
		s.End()
	}
}

// A batch goes when MaxExportBatchSize spans are queued, without waiting
// for BatchTimeout; ForceFlush sends what is left, Shutdown too, and the
// spans ended after it are dropped.
func TestBatcherExportsFullBatches(t *testing.T) {
	exp := &batches{sizes: make(chan int, 10)}
	b := newBatcher(exp, sdktrace.BatchSpanProcessorOptions{BatchTimeout: time.Hour, ExportTimeout: time.Minute, MaxQueueSize: 100, MaxExportBatchSize: 4})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 9)
	for range 2 {
		if n := <-exp.sizes; n != 4 {
			t.Fatalf("a batch of %d spans, want 4", n)
		}
	}
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := <-exp.sizes; n != 1 {
		t.Fatalf("flushed %d spans, want 1", n)
	}
	endSpans(tp, 2)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := <-exp.sizes; n != 2 {
		t.Fatalf("%d spans exported at shutdown, want 2", n)
	}
	exp.mu.Lock()
	shut := exp.shut
	exp.mu.Unlock()
	if !shut {
		t.Error("the exporter was not shut down")
	}
	endSpans(tp, 5) // dropped
	select {
	case n := <-exp.sizes:
		t.Fatalf("%d spans exported after shutdown", n)
	case <-b.done:
	}
	if len(b.queue) != 0 {
		t.Fatalf("%d spans queued after shutdown", len(b.queue))
	}
}

// Over MaxQueueSize spans waiting for an export that is slow, the rest are
// dropped: the queue does not grow.
func TestBatcherDropsOverItsQueue(t *testing.T) {
	exp := &batches{sizes: make(chan int, 10), started: make(chan struct{}, 10), release: make(chan struct{})}
	b := newBatcher(exp, sdktrace.BatchSpanProcessorOptions{BatchTimeout: time.Hour, ExportTimeout: time.Minute, MaxQueueSize: 6, MaxExportBatchSize: 2})
	var mu sync.Mutex
	var errs []string
	b.handle = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err.Error())
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 2) // the first batch, whose export waits
	<-exp.started   // the batch taken from the queue
	endSpans(tp, 10)
	b.mu.Lock()
	queued, dropped := len(b.queue), b.dropped
	b.mu.Unlock()
	if queued != 6 || dropped != 4 {
		t.Fatalf("%d spans queued, %d dropped, want 6 and 4", queued, dropped)
	}
	close(exp.release) // the exports that follow do not wait
	total := 0
	for total < 8 {
		total += <-exp.sizes
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if total != 8 {
		t.Fatalf("%d spans exported, want 8", total)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || errs[0] != "4 spans dropped: the queue of 6 (OTEL_BSP_MAX_QUEUE_SIZE) was full" {
		t.Errorf("errors handled %q, want the 4 spans dropped", errs)
	}
}

func TestBatchOptions(t *testing.T) {
	env := map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_BSP_EXPORT_TIMEOUT": "x", "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1000"}
	o := batchOptions(func(k string) string { return env[k] })
	want := sdktrace.BatchSpanProcessorOptions{BatchTimeout: 200 * time.Millisecond, ExportTimeout: 30 * time.Second, MaxQueueSize: 100, MaxExportBatchSize: 100}
	if o != want {
		t.Errorf("%+v, want %+v", o, want)
	}
	o = batchOptions(func(string) string { return "" })
	want = sdktrace.BatchSpanProcessorOptions{BatchTimeout: 5 * time.Second, ExportTimeout: 30 * time.Second, MaxQueueSize: 2048, MaxExportBatchSize: 512}
	if o != want {
		t.Errorf("defaults %+v, want %+v", o, want)
	}
}
