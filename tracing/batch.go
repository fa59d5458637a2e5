package tracing

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is a span processor that exports the spans ended in batches,
// as the SDK's batch span processor does, with its settings (batchOptions,
// OTEL_BSP_*): a batch when MaxExportBatchSize spans are queued or
// BatchTimeout after the last export, whichever comes first, the spans
// over MaxQueueSize dropped. Unlike it, ending a span does not wake the
// exporting goroutine (the SDK's sends each span on a channel it waits
// on): a run's two spans cost it an append under a lock, and the goroutine
// wakes once a batch.
type batcher struct {
	exp  sdktrace.SpanExporter
	opts sdktrace.BatchSpanProcessorOptions
	// handle is given the errors of exports, and the count of spans
	// dropped: otel.Handle, which serve logs as a WARN line.
	handle func(error)

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	dropped int // since the last export
	stopped bool

	ready chan struct{}   // a batch is queued; capacity 1
	flush chan chan error // ForceFlush: export all, then send the error
	stop  chan struct{}
	done  chan struct{} // the goroutine returned
}

var _ sdktrace.SpanProcessor = (*batcher)(nil)

// newBatcher starts a batcher exporting to exp.
func newBatcher(exp sdktrace.SpanExporter, opts sdktrace.BatchSpanProcessorOptions) *batcher {
	b := &batcher{exp: exp, opts: opts, handle: otel.Handle,
		queue: make([]sdktrace.ReadOnlySpan, 0, opts.MaxExportBatchSize),
		ready: make(chan struct{}, 1), flush: make(chan chan error), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// batchOptions are the batch settings OTEL_BSP_* give, as the SDK reads
// them (milliseconds; a value that is not a positive number is the
// default): OTEL_BSP_SCHEDULE_DELAY 5000, OTEL_BSP_EXPORT_TIMEOUT 30000,
// OTEL_BSP_MAX_QUEUE_SIZE 2048, OTEL_BSP_MAX_EXPORT_BATCH_SIZE 512 (at
// most the queue's size).
func batchOptions(getenv func(string) string) sdktrace.BatchSpanProcessorOptions {
	num := func(key string, def int) int {
		if n, err := strconv.Atoi(strings.TrimSpace(getenv(key))); err == nil && n > 0 {
			return n
		}
		return def
	}
	o := sdktrace.BatchSpanProcessorOptions{
		BatchTimeout:       time.Duration(num("OTEL_BSP_SCHEDULE_DELAY", sdktrace.DefaultScheduleDelay)) * time.Millisecond,
		ExportTimeout:      time.Duration(num("OTEL_BSP_EXPORT_TIMEOUT", sdktrace.DefaultExportTimeout)) * time.Millisecond,
		MaxQueueSize:       num("OTEL_BSP_MAX_QUEUE_SIZE", sdktrace.DefaultMaxQueueSize),
		MaxExportBatchSize: num("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", sdktrace.DefaultMaxExportBatchSize),
	}
	if o.MaxExportBatchSize > o.MaxQueueSize {
		o.MaxExportBatchSize = min(sdktrace.DefaultMaxExportBatchSize, o.MaxQueueSize)
	}
	return o
}

func (*batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, a sampled span, or drops it when the queue is full or
// the batcher stopped.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped || len(b.queue) >= b.opts.MaxQueueSize {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	full := len(b.queue) == b.opts.MaxExportBatchSize
	b.mu.Unlock()
	if full {
		select {
		case b.ready <- struct{}{}:
		default: // the goroutine is told already
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(b.opts.BatchTimeout)
	defer timer.Stop()
	for {
		select {
		case <-b.stop:
			b.export(true)
			return
		case flushed := <-b.flush:
			flushed <- b.export(true)
		case <-b.ready:
			b.export(false)
		case <-timer.C:
			b.export(true)
		}
		timer.Reset(b.opts.BatchTimeout)
	}
}

// export exports the queued spans in batches of MaxExportBatchSize: all
// of them, or (all false) the full batches only. It returns the last
// export's error, also given to handle.
func (b *batcher) export(all bool) error {
	var last error
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.opts.MaxExportBatchSize)
		if n == 0 || (!all && n < b.opts.MaxExportBatchSize) {
			b.mu.Unlock()
			return last
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		dropped := b.dropped
		b.dropped = 0
		b.mu.Unlock()
		if dropped > 0 {
			b.handle(fmt.Errorf("%d spans dropped: the queue of %d (OTEL_BSP_MAX_QUEUE_SIZE) was full", dropped, b.opts.MaxQueueSize))
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.ExportTimeout)
		last = b.exp.ExportSpans(ctx, batch)
		if last != nil {
			b.handle(last)
		}
		cancel()
	}
}

// ForceFlush exports the spans queued, or gives up when ctx is done.
func (b *batcher) ForceFlush(ctx context.Context) error {
	flushed := make(chan error, 1)
	select {
	case b.flush <- flushed:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-flushed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports the spans queued, drops those ended later, and shuts
// the exporter down.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	close(b.stop)
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.exp.Shutdown(ctx)
}
