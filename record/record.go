package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/agui-relay/agui-relay/event"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Recorder records runs, one directory per run under Dir, in the formats
// `agui-relay translate` and `agui-relay check` read:
//
//	input.received.json   the RunAgentInput as the consumer sent it
//	input.forwarded.json  the RunAgentInput as sent to the producer
//	producer.sse          the producer's event stream as received (after
//	                      content decoding), byte for byte
//	emitted.sse           the stream as written to the consumer
//	meta.json             versions, plans, outcome, times, warnings, what
//	                      was truncated, and the commands that replay it
//
// Files that do not apply are left out: a run refused before the producer
// was asked has no forwarded input, an answer that was not an event stream
// has no .sse files. The directory is named
// <start, UTC>-<sequence>-<runId> and appears whole (it is written under a
// temporary name and renamed).
//
// The stream is never held up by the disk: a run's material is kept in
// memory while the run lasts, up to MaxBytes per recording and MaxPending
// across every recording not yet written (what is over is cut, and meta.json
// says which files are incomplete), and handed to one writer goroutine
// through a queue of Queue recordings; a recording that finds the queue full
// is dropped and counted. Redaction (Redact) happens in the writer.
//
// Set the fields, then use Tap (Relay.Tap = rc.Tap, or with relay.JoinTaps) from
// any number of goroutines; Close writes what is queued and stops.
type Recorder struct {
	// Dir is where recordings go; it is created when missing.
	Dir string
	// Redact replaces message content in every file (see RedactJSON).
	Redact bool
	// MaxBytes caps one recording, its files together; zero means 16 MiB.
	MaxBytes int
	// MaxPending caps the bytes held for recordings not yet written, across
	// runs; zero means 256 MiB.
	MaxPending int
	// Queue is how many finished recordings may wait for the writer; zero
	// means 64.
	Queue int
	// Log receives a line per recording written and the failures; nil
	// discards.
	Log *zap.Logger

	once    sync.Once
	mu      sync.RWMutex // guards closed against the sends of End
	closed  bool
	jobs    chan *recording
	done    chan struct{}
	log     *zap.Logger
	pending atomic.Int64
	seq     atomic.Uint64

	written, dropped, failed atomic.Int64
}

// RecorderStats counts what a Recorder did.
type RecorderStats struct {
	// Written recordings; Dropped because the queue was full or the
	// recorder closed; Failed to write.
	Written, Dropped, Failed int64
}

// Stats returns the counts so far.
func (rc *Recorder) Stats() RecorderStats {
	return RecorderStats{rc.written.Load(), rc.dropped.Load(), rc.failed.Load()}
}

func (rc *Recorder) start() {
	rc.once.Do(func() {
		if rc.MaxBytes <= 0 {
			rc.MaxBytes = 16 << 20
		}
		if rc.MaxPending <= 0 {
			rc.MaxPending = 256 << 20
		}
		if rc.Queue <= 0 {
			rc.Queue = 64
		}
		rc.log = rc.Log
		if rc.log == nil {
			rc.log = zap.NewNop()
		}
		rc.jobs = make(chan *recording, rc.Queue)
		rc.done = make(chan struct{})
		go rc.writer()
	})
}

// Close writes the recordings queued and returns once they are written.
// Runs that end after Close are not recorded.
func (rc *Recorder) Close() {
	rc.start()
	rc.mu.Lock()
	if !rc.closed {
		rc.closed = true
		close(rc.jobs)
	}
	rc.mu.Unlock()
	<-rc.done
}

// Tap returns the tap that records one run.
func (rc *Recorder) Tap(rep *relay.RunReport) relay.RunTap {
	rc.start()
	return &recording{rc: rc}
}

// Recorded file names.
const (
	RecordReceived  = "input.received.json"
	RecordForwarded = "input.forwarded.json"
	RecordProducer  = "producer.sse"
	RecordEmitted   = "emitted.sse"
	RecordMeta      = "meta.json"
)

// recording is the material of one run, kept until the run ends.
type recording struct {
	rc *Recorder

	received, forwarded, producer, emitted []byte
	hasForwarded, streamed                 bool
	plan                                   negotiate.InputPlan
	consumer, producerConfigured           negotiate.Version
	held                                   int
	truncated                              []string
	warnings                               []translate.Warning
	rep                                    relay.RunReport
}

// keep appends p to *dst within the budgets, and notes a cut.
func (r *recording) keep(dst *[]byte, p []byte, name string) {
	n := min(len(p), r.rc.MaxBytes-r.held)
	if n > 0 {
		if total := r.rc.pending.Add(int64(n)); total > int64(r.rc.MaxPending) {
			over := int(min(total-int64(r.rc.MaxPending), int64(n)))
			r.rc.pending.Add(-int64(over))
			n -= over
		}
	}
	if n > 0 {
		*dst = append(*dst, p[:n]...)
		r.held += n
	}
	if n < len(p) && !slices.Contains(r.truncated, name) {
		r.truncated = append(r.truncated, name)
	}
}

func (r *recording) release() {
	r.rc.pending.Add(-int64(r.held))
	r.held = 0
}

func (r *recording) Received(body []byte) {
	r.keep(&r.received, body, RecordReceived)
	if r.received == nil {
		r.received = []byte{}
	}
}

func (r *recording) Forwarded(plan negotiate.InputPlan, body []byte) {
	r.plan, r.hasForwarded = plan, true
	r.keep(&r.forwarded, body, RecordForwarded)
}

func (r *recording) Streaming(consumer, producerConfigured negotiate.Version) {
	r.streamed, r.consumer, r.producerConfigured = true, consumer, producerConfigured
}

func (r *recording) Read(p []byte)  { r.keep(&r.producer, p, RecordProducer) }
func (r *recording) Wrote(p []byte) { r.keep(&r.emitted, p, RecordEmitted) }
func (r *recording) Flushed(int)    {}

func (r *recording) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}

func (r *recording) Warned(w translate.Warning) {
	if len(r.warnings) < 100 {
		r.warnings = append(r.warnings, w)
	}
}

func (r *recording) End(rep *relay.RunReport) {
	r.rep = *rep
	r.rep.Counts = nil
	rc := r.rc
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if !rc.closed {
		select {
		case rc.jobs <- r:
			return
		default:
		}
	}
	r.release()
	rc.dropped.Add(1)
	rc.log.Warn("recording dropped: the recorder's queue is full", zap.String("run", rep.RunID), zap.String("thread", rep.ThreadID))
}

func (rc *Recorder) writer() {
	defer close(rc.done)
	for r := range rc.jobs {
		dir, err := rc.write(r)
		r.release()
		if err != nil {
			rc.failed.Add(1)
			rc.log.Error("writing a recording", zap.String("run", r.rep.RunID), zap.Error(err))
			continue
		}
		rc.written.Add(1)
		rc.log.Debug("run recorded", zap.String("run", r.rep.RunID), zap.String("dir", dir))
	}
}

// RecordingMeta is meta.json.
type RecordingMeta struct {
	// Format is the layout's version, 1.
	Format   int    `json:"format"`
	Route    string `json:"route,omitempty"`
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
	// URL is where the run was sent; Status what the consumer was answered;
	// Problem the problem type when the relay answered with one.
	URL     string `json:"url,omitempty"`
	Status  int    `json:"status"`
	Problem string `json:"problem,omitempty"`
	Start   string `json:"start"`
	// Duration is the run's length, as Go prints durations.
	Duration string `json:"duration"`
	// Consumer is the version the stream was shaped for; Producer the
	// version the producer spoke on the last run ("unknown": it predates
	// protocolVersion); ProducerConfigured the relay's configured producer
	// version, "" when it learns it per run.
	Consumer string `json:"consumer,omitempty"`
	// ConsumerLearnt says how Consumer was learnt: declared, configured or
	// inferred (see negotiate.Learnt).
	ConsumerLearnt     string `json:"consumerLearnt,omitempty"`
	Producer           string `json:"producer,omitempty"`
	ProducerConfigured string `json:"producerConfigured,omitempty"`
	// ProducerPython names a Python producer by its SDK release
	// ("ag-ui-protocol@0.1.10"; Producer is then the TypeScript release its
	// events match), "" for any other.
	ProducerPython string `json:"producerPython,omitempty"`
	// Input is the input plan: translated or not, from the consumer's
	// version to the producer's.
	Input *RecordedInputPlan `json:"input,omitempty"`
	// Streamed says the producer answered with an event stream.
	Streamed   bool   `json:"streamed"`
	Translated bool   `json:"translated"`
	Events     int    `json:"events"`
	Bytes      int    `json:"bytes"`
	Runs       int    `json:"runs"`
	Terminal   string `json:"terminal,omitempty"`
	Abort      string `json:"abort,omitempty"`
	Error      string `json:"error,omitempty"`
	// Redacted says message content was replaced (see RedactJSON).
	Redacted bool `json:"redacted"`
	// Truncated lists the files cut short by the size caps.
	Truncated []string `json:"truncated,omitempty"`
	// Warnings are the run's lossy translations.
	Warnings []RecordedWarning `json:"warnings,omitempty"`
	Files    []string          `json:"files"`
	// Replay gives the commands that reproduce the files from the
	// recording: events (producer.sse to emitted.sse), check (judges
	// emitted.sse), input (input.received.json to input.forwarded.json).
	Replay map[string]string `json:"replay,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

// RecordedInputPlan is the input's plan in meta.json.
type RecordedInputPlan struct {
	Translate bool   `json:"translate"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// RecordedWarning is one lossy translation in meta.json.
type RecordedWarning struct {
	Shape     string `json:"shape"`
	Step      string `json:"step"`
	Direction string `json:"direction"`
	From      string `json:"from"`
	To        string `json:"to"`
	Count     int    `json:"count"`
	Why       string `json:"why"`
}

func (r *recording) meta(redacted bool) *RecordingMeta {
	rep := &r.rep
	m := &RecordingMeta{
		Format: 1, Route: rep.Route, RunID: rep.RunID, ThreadID: rep.ThreadID, URL: rep.URL,
		Status: rep.Status, Problem: rep.Problem, Start: rep.Start.UTC().Format(time.RFC3339Nano),
		Duration: rep.Duration.String(), Streamed: r.streamed, Translated: rep.Translated,
		Events: rep.Events, Bytes: rep.Bytes, Runs: rep.Runs, Terminal: rep.Terminal, Abort: rep.Abort,
		Redacted: redacted, Truncated: r.truncated, Replay: map[string]string{},
	}
	if !rep.Consumer.IsZero() {
		m.Consumer = rep.Consumer.String()
		m.ConsumerLearnt = rep.ConsumerLearnt.String()
	}
	if r.streamed {
		m.Producer = relay.VersionLabel(rep.Producer)
		if !r.producerConfigured.IsZero() {
			m.ProducerConfigured = r.producerConfigured.String()
		}
	}
	if !rep.ProducerPython.IsZero() {
		m.ProducerPython = rep.ProducerPython.Name()
	}
	if rep.Err != nil {
		m.Error = rep.Err.Error()
	}
	if r.hasForwarded {
		m.Input = &RecordedInputPlan{Translate: r.plan.Translate, From: r.plan.From.String(), To: r.plan.To.String()}
		to := r.plan.To.String()
		if !r.plan.Python.IsZero() {
			to = r.plan.Python.Name() // its own rules apply, not its core's alone
		}
		m.Replay["input"] = fmt.Sprintf("agui-relay translate --input --to %s --from %s %s", to, r.plan.From, RecordReceived)
	}
	if r.streamed {
		from := ""
		switch {
		case r.hasForwarded && !r.plan.Python.IsZero():
			from = " --from " + r.plan.Python.Name() // always translated, as live
		case !r.producerConfigured.IsZero():
			from = " --from " + r.producerConfigured.String()
		}
		m.Replay["events"] = fmt.Sprintf("agui-relay translate --to %s%s %s", r.consumer, from, RecordProducer)
		m.Replay["check"] = fmt.Sprintf("agui-relay check --version %s %s", r.consumer, RecordEmitted)
		if rep.Abort != "" {
			m.Notes = append(m.Notes, fmt.Sprintf("the relay ended the stream (%s): emitted.sse stops where it did (with a RUN_ERROR of the relay's own when one was owed), producer.sse holds what had arrived; a replay differs at the end", rep.Abort))
		}
	}
	if len(r.truncated) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("cut at the recorder's size caps (%d bytes a recording): %s incomplete, the replays do not hold", r.rc.MaxBytes, strings.Join(r.truncated, ", ")))
	}
	if len(m.Replay) == 0 {
		m.Replay = nil
	}
	for _, w := range r.warnings {
		m.Warnings = append(m.Warnings, RecordedWarning{Shape: w.Shape, Step: w.Step, Direction: w.Direction.String(),
			From: relay.VersionLabel(w.From), To: relay.VersionLabel(w.To), Count: w.Count, Why: w.Why})
	}
	return m
}

// write writes one recording and returns its directory.
func (rc *Recorder) write(r *recording) (string, error) {
	if err := os.MkdirAll(rc.Dir, 0o700); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%06d-%s", r.rep.Start.UTC().Format("20060102T150405.000Z"), rc.seq.Add(1), safeName(r.rep.RunID))
	final := filepath.Join(rc.Dir, name)
	tmp := filepath.Join(rc.Dir, "."+name+".tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", err
	}
	m := r.meta(rc.Redact)
	files := []struct {
		name  string
		data  []byte
		has   bool
		redac func([]byte) []byte
	}{
		{RecordReceived, r.received, r.received != nil, RedactJSON},
		{RecordForwarded, r.forwarded, r.hasForwarded, RedactJSON},
		{RecordProducer, r.producer, r.streamed, RedactSSE},
		{RecordEmitted, r.emitted, r.streamed, RedactSSE},
	}
	var err error
	for _, f := range files {
		if !f.has {
			continue
		}
		data := f.data
		if rc.Redact {
			data = f.redac(data)
		}
		m.Files = append(m.Files, f.name)
		if err = os.WriteFile(filepath.Join(tmp, f.name), data, 0o600); err != nil {
			break
		}
	}
	if err == nil {
		m.Files = append(m.Files, RecordMeta)
		var b []byte
		if b, err = json.MarshalIndent(m, "", "  "); err == nil {
			err = os.WriteFile(filepath.Join(tmp, RecordMeta), append(b, '\n'), 0o600)
		}
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.RemoveAll(tmp) //nolint:errcheck // best effort
		return "", err
	}
	return final, nil
}

// safeName keeps a run id usable in a file name: letters, digits, '.', '-'
// and '_', at most 64 bytes; "run" when nothing is left.
func safeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 64; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && b.Len() > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// structuralKeys are the members whose string values redaction keeps: the
// types, roles, names and versions that say what the material is and that
// translation and checking decide on. Members named like an id (ending in
// "Id", "Ids" or "ID") are kept too.
var structuralKeys = map[string]bool{
	"type": true, "role": true, "id": true, "name": true, "toolCallName": true, "stepName": true,
	"activityType": true, "protocolVersion": true, "mimeType": true, "code": true,
	"op": true, "path": true, "from": true,
}

func structuralKey(k string) bool {
	return structuralKeys[k] || strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "Ids") || strings.HasSuffix(k, "ID")
}

// RedactJSON returns doc with message content replaced: every string value
// is replaced by as many "x" as it has characters, except the values of
// structural members (type, role, id, name, toolCallName, stepName,
// activityType, protocolVersion, mimeType, code, the JSON Patch op, path and
// from, and any member whose name ends in Id, Ids or ID), which are kept,
// with the strings of arrays under them. Member names, numbers, booleans,
// nulls and the layout are kept byte for byte, so the document's structure,
// ids and types survive and its length barely changes; an empty string stays
// empty. Text deltas, message content, tool call arguments and results,
// reasoning, state, titles, error messages, context values and
// forwardedProps strings are all replaced. A document that is not JSON is
// replaced whole, character by character.
func RedactJSON(doc []byte) []byte {
	// rules.Valid caps nesting first: gjson alone recurses without bound.
	if !rules.Valid(unsafe.String(unsafe.SliceData(doc), len(doc))) {
		return []byte(strings.Repeat("x", utf8.RuneCount(doc)))
	}
	var ed translate.Edits
	redactValue(translate.Root(doc), false, &ed)
	out, ok := ed.Apply(doc, nil)
	if !ok {
		return []byte(strings.Repeat("x", utf8.RuneCount(doc)))
	}
	return out
}

func redactValue(v gjson.Result, keep bool, ed *translate.Edits) {
	switch {
	case v.Type == gjson.String:
		if !keep {
			ed.ReplaceString(v.Index, v.Index+len(v.Raw), `"`+strings.Repeat("x", utf8.RuneCountInString(v.Str))+`"`)
		}
	case v.IsObject():
		for _, it := range translate.Items(v, nil) {
			redactValue(it.Value, structuralKey(it.Key.Str), ed)
		}
	case v.IsArray():
		for _, it := range translate.Items(v, nil) {
			redactValue(it.Value, keep, ed)
		}
	}
}

// RedactSSE redacts every event of an SSE stream with RedactJSON. Frames
// with data are written as the relay writes them (data: lines, LF);
// comments and other fields are kept.
func RedactSSE(stream []byte) []byte {
	sc := event.NewScanner(bytes.NewReader(stream), len(stream)+16)
	var out []byte
	for {
		f, err := sc.Next()
		if err != nil { // io.EOF: a bytes.Reader neither breaks nor overflows the limit
			return out
		}
		if !f.HasData() {
			out = append(out, f.Raw...)
			continue
		}
		out = event.AppendFrame(out, f.Fields, RedactJSON(f.Data))
	}
}
