package event

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
	"github.com/agui-relay/agui-relay/translate"
)

// Translator holds what every run's translation shares: the steps, the
// chains built from them (one per target version, built on first use) and
// the observer that counts and reports. It is safe for concurrent use.
type Translator struct {
	// Steps is the registry; nil means translate.Registry().
	Steps []*translate.Step
	// Observer receives counts and warnings of every run's translation, as
	// the translate package reports them (a Relay's log of lossy
	// translations; the translate command's lines); nil discards them. A
	// Stream's Tap is told them too.
	Observer translate.Observer
	// Now tells the time that decides which translations of retired shapes
	// are still live: once every deprecation-registry entry a step serves
	// has expired, the step is left out of the chains and its shape is
	// simply unrecognised (spec 000, "Retired shapes"). nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	live   []*translate.Step                       // Steps less the expired translations
	until  time.Time                               // live and chains hold until this expiry passes
	chains map[negotiate.Version]*translate.Chain  // nil until live is worked out
	inputs map[negotiate.Version][]*translate.Step // the input chains, as chains
}

// steps returns the live steps, recomputed (and the chains dropped) when a
// registry entry has expired since they were last worked out. The caller
// holds t.mu.
func (t *Translator) steps() []*translate.Step {
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	if t.chains != nil && now.Before(t.until) {
		return t.live
	}
	all := t.Steps
	if all == nil {
		all = translate.Registry()
	}
	t.live, t.until = liveSteps(all, rules.Deprecations(), now)
	t.chains = map[negotiate.Version]*translate.Chain{}
	t.inputs = map[negotiate.Version][]*translate.Step{}
	return t.live
}

// liveSteps leaves out the upgrade steps whose every registry entry expired
// at or before now, and says until when that holds (the next expiry still to
// come; far in the future when none is). An input step serves the entries of
// the event step it mirrors ("binary-to-media-input": "binary-to-media").
func liveSteps(all []*translate.Step, reg []rules.Deprecation, now time.Time) ([]*translate.Step, time.Time) {
	until := now.AddDate(100, 0, 0)
	live := make([]*translate.Step, 0, len(all))
	for _, s := range all {
		name := strings.TrimSuffix(s.Name, "-input")
		entries, alive := 0, false
		for _, d := range reg {
			if d.Step != name {
				continue
			}
			entries++
			if d.LiveAt(now) {
				alive = true
				if d.Expires.Before(until) {
					until = d.Expires
				}
			}
		}
		if s.Kind == translate.Upgrade && entries > 0 && !alive {
			continue
		}
		live = append(live, s)
	}
	return live, until
}

func (t *Translator) chain(target negotiate.Version) *translate.Chain {
	t.mu.Lock()
	defer t.mu.Unlock()
	steps := t.steps()
	c, ok := t.chains[target]
	if !ok {
		c = translate.EventChain(target, steps)
		t.chains[target] = c
	}
	return c
}

// InputSteps returns the steps, expired translations left out, for the
// input direction (translate.TranslateInputWith).
func (t *Translator) InputSteps() []*translate.Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.steps()
}

// InputChain returns the input chain for a producer of target
// (translate.InputChain of InputSteps), ordered once per target as the event
// chains are (translate.TranslateReadInput). The caller must not modify it.
func (t *Translator) InputChain(target negotiate.Version) []*translate.Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	steps := t.steps()
	c, ok := t.inputs[target]
	if !ok {
		c = translate.InputChain(target, steps)
		t.inputs[target] = c
	}
	return c
}

// Stream shapes one producer event stream for one consumer: frames in, one
// event at a time, bytes out. Each run on the stream is decided on its own
// at its RUN_STARTED. A run that needs no translation is copied byte for
// byte; only non-canonical framing is re-framed.
//
// A Stream is used by one goroutine.
type Stream struct {
	t        *Translator
	consumer negotiate.Version
	producer negotiate.Version // configured (zero: learnt per run); declarations are read per run
	w        io.Writer
	bw       borrower // w, when it can take frames without copying them
	fw       flusher  // w, when it buffers until a flush

	plan    negotiate.Plan
	decided bool
	state   translate.StreamState // what translation carries across the stream's runs
	cr      *translate.ChainRun
	fields  []byte // fields of the frame being translated, written once
	scratch []byte
	out     emitted // what the chain emitted for the frame being shaped

	// Events and Bytes count what was written.
	Events, Bytes int
	// NotJSON counts the events relayed untouched because their data is
	// not JSON, among those the relay parses: events a translation step
	// concerns. Events passed through byte for byte are not parsed.
	NotJSON int
	// InRun is true between a RUN_STARTED and its terminal event.
	InRun bool
	// Runs counts RUN_STARTED events seen; LastError is the message of the
	// last RUN_ERROR relayed.
	Runs int
	// Terminal is the type of the last terminal event relayed
	// ("RUN_FINISHED" or "RUN_ERROR"), empty before any.
	Terminal string
	// ThreadID and RunID of the current (or last) run, copied.
	ThreadID, RunID string
	// OnPlan, when set, is called with each run's plan: the relay logs the
	// plan's warnings (a tap is not told decisions).
	OnPlan func(negotiate.Plan)
	// Tap, when set, sees every byte written and every translation of the
	// stream.
	Tap Tap
	// Counts, when set, counts the events and bytes read and written by
	// event type.
	Counts *Counts
	// ProducerPython, when set, names the producer by its Python SDK
	// release (the producer configured is then its PyProfile.Events): its
	// runs are always translated (see negotiate.Peer.Python).
	ProducerPython negotiate.PyRelease

	obs translate.Observer // the runs' observer, made at the first decision
	own bool               // the frame is the relay's own (Fail), not the producer's
}

// emitted is what the run's chain emitted for one frame (Stream.emit,
// the chain's output): the events framed one after the other, and the
// type of the last terminal event among them ("" when none). Frame writes
// it once the chain has returned.
type emitted struct {
	frames   []byte
	terminal string
}

// terminalType returns typ when it is a terminal event's type, as a
// constant (no allocation), else "".
func terminalType(typ []byte) string {
	switch string(typ) {
	case "RUN_FINISHED":
		return "RUN_FINISHED"
	case "RUN_ERROR":
		return "RUN_ERROR"
	}
	return ""
}

// NewStream starts shaping a stream for a consumer reading consumer, from a
// producer configured as producerConfigured (zero: learnt per run). Output
// goes to w, the stream's sink, which must copy what it keeps of each Write
// (the bytes are the scanner's or the chain's: a bufio.Writer does, the
// relay's consumer writer too). A sink that also has Flush() error is
// flushed by Pump before every read; one that has WriteBorrowed(p []byte)
// error is given the frames passed through without a copy (see Frame).
func (t *Translator) NewStream(consumer, producerConfigured negotiate.Version, w io.Writer) *Stream {
	bw, _ := w.(borrower)
	fw, _ := w.(flusher)
	return &Stream{t: t, consumer: consumer, producer: producerConfigured, w: w, bw: bw, fw: fw}
}

// borrower is a sink that can take bytes without copying them, when the
// caller leaves them unchanged until its next flush (the relay's consumer
// writer: Pump flushes before the scanner's buffer changes). Frame gives it
// the frames it passes through as they came.
type borrower interface {
	WriteBorrowed(p []byte) error
}

// flusher is a sink that buffers what it is given until Flush.
type flusher interface {
	Flush() error
}

// Pump relays frames from src through the stream to its sink: every frame
// sc holds is shaped or passed on (Frame), then the sink is flushed and sc
// reads src once more (Fill), and so on. The flush comes before each read,
// that is whenever the stream could wait: events that arrived together go
// out together, none waits for a later one, and the frames the sink took
// borrowed go out before the read moves the scanner's bytes. A flush that
// blocks on a slow consumer slows the reading of the producer too. It is
// the relay's loop (relay's relayedStream.loop calls it): a src that is a
// ReadNoter is told of each read before it, and the Tap is shown what each
// read brought (Read).
//
// Pump returns what stopped it: readErr is src's (syscall.EAGAIN when a
// polled src has nothing for now: call Pump again once it has; io.EOF at
// its end; ErrFrameTooLarge), writeErr the sink's (the stream is over).
// Both are nil after a frame that ended a run (Terminal is set then): the
// caller may decide the stream's end, and call Pump again to go on.
func (s *Stream) Pump(sc *Scanner, src io.Reader) (readErr, writeErr error) {
	var f Frame // on the stack: Scan writes the frame into it
	noter, _ := src.(ReadNoter)
	for {
		ok, err := sc.Scan(&f)
		if err != nil {
			return err, nil
		}
		if ok {
			open := s.Terminal == ""
			if err := s.Frame(&f); err != nil {
				return nil, err
			}
			if open && s.Terminal != "" {
				return nil, nil // a run ended
			}
			continue
		}
		if s.fw != nil {
			if err := s.fw.Flush(); err != nil {
				return nil, err
			}
			if s.Tap != nil {
				s.Tap.Flushed(s.Events)
			}
		}
		if noter != nil {
			noter.NoteRead()
		}
		err = sc.Fill(src)
		if s.Tap != nil {
			if b := sc.Filled(); len(b) > 0 {
				s.Tap.Read(b)
			}
		}
		if err != nil {
			return err, nil
		}
	}
}

// A ReadNoter is a source Pump tells of each read it is about to make
// (Scanner.Fill): the relay notes the time for its idle timer there.
type ReadNoter interface {
	NoteRead()
}

// Plan returns the decision for the current run.
func (s *Stream) Plan() negotiate.Plan { return s.plan }

// Frame handles one frame, which the caller keeps (on its stack: see
// Pump). The frame's bytes are borrowed: a frame that passes
// through as it came may be written from its own bytes by the writer's next
// flush (a borrower's), so they must stay unchanged until then.
func (s *Stream) Frame(f *Frame) error {
	if !f.HasData() {
		out := f.Raw
		if !f.Canonical {
			s.scratch = append(append(s.scratch[:0], f.Fields...), '\n')
			out = s.scratch
		}
		if s.Counts != nil {
			s.Counts.add(FromProducer, evComment, len(f.Raw))
			s.Counts.add(ToConsumer, evComment, len(out))
		}
		return s.put(out, f.Canonical)
	}
	typ := rules.PeekType(f.Data)
	ti := 0 // typ's label index, worked out once, when counted
	if s.Counts != nil {
		ti = eventIndex(typ)
		if !s.own {
			s.Counts.add(FromProducer, ti, len(f.Raw))
		}
	}
	if string(typ) == "RUN_STARTED" {
		s.startRun(f.Data)
	} else if !s.decided {
		s.decide(negotiate.Peer{Configured: s.producer, Python: s.ProducerPython})
	}
	terminal := terminalType(typ) // "" for any other event
	shaped := false
	if w := s.wanted(typ, f.Data); w.Any() {
		// The frame's fields go with what the chain emits for it.
		held := s.fields
		s.fields = f.Fields
		s.out = emitted{frames: s.out.frames[:0]}
		shapedAs := s.cr.ShapeWanted(w, f.Data, typ)
		if terminal != "" && shapedAs == translate.Shaped && s.out.terminal != "" {
			// What the consumer is told: a step may make the producer's
			// RUN_FINISHED a RUN_ERROR (a cancelled outcome, for 0.0.x).
			terminal = s.out.terminal
		}
		switch shapedAs {
		case translate.Shaped:
			shaped = true
		case translate.NotJSON:
			s.NotJSON++
		}
		if !shaped {
			s.fields = held // relayed as it came, below
		}
	}
	var err error
	switch {
	case shaped:
		if len(s.out.frames) > 0 {
			err = s.write(s.out.frames)
		}
	case f.Canonical:
		s.countEvent(ti, len(f.Raw))
		err = s.put(f.Raw, true)
	default:
		s.scratch = AppendFrame(s.scratch[:0], f.Fields, f.Data)
		s.countEvent(ti, len(s.scratch))
		err = s.write(s.scratch)
	}
	if terminal != "" {
		if s.InRun {
			s.endRun(terminal)
		} else {
			s.Terminal = terminal // a RUN_ERROR before any RUN_STARTED
		}
	}
	return err
}

// wanted asks the run's chain, if it has one, which step wants ev.
func (s *Stream) wanted(typ, ev []byte) translate.Wanted {
	if s.cr == nil {
		return translate.Wanted{}
	}
	return s.cr.Wanted(typ, ev)
}

// startRun decides the run that this RUN_STARTED opens and applies the
// declaration the decision calls for.
func (s *Stream) startRun(ev []byte) {
	if s.InRun {
		s.finishRun()
	}
	s.InRun = true
	s.Runs++
	s.Terminal = ""
	// Get's strings alias the borrowed frame: keep copies.
	s.ThreadID = strings.Clone(translate.Get(ev, "threadId").String())
	s.RunID = strings.Clone(translate.Get(ev, "runId").String())
	pv := translate.Get(ev, "protocolVersion")
	peer := negotiate.Peer{Configured: s.producer, Python: s.ProducerPython}
	if pv.Exists() {
		peer.HasDeclared = true
		peer.Declared = strings.Clone(pv.String())
		if pv.Type != 0 && pv.Raw != "" && pv.Raw[0] != '"' {
			peer.Declared = strings.Clone(pv.Raw)
		}
	}
	s.decide(peer)
	if s.cr != nil {
		s.cr.Run.RunID, s.cr.Run.ThreadID = s.RunID, s.ThreadID
	}
}

func (s *Stream) decide(peer negotiate.Peer) {
	s.plan = negotiate.Decide(s.consumer, peer)
	s.decided = true
	s.cr = nil
	if s.OnPlan != nil {
		s.OnPlan(s.plan)
	}
	if !s.plan.Translate {
		return
	}
	from := s.plan.Producer
	if s.obs == nil {
		s.obs = ObserverFor(s.t.Observer, s.Tap)
	}
	run := translate.NewRun(translate.Events, from, s.consumer, s.obs)
	run.Stream = &s.state
	s.cr = s.t.chain(s.consumer).Start(run, s.plan, s.emit)
}

func (s *Stream) endRun(terminal string) {
	s.Terminal = terminal
	s.InRun = false
	s.finishRun()
}

func (s *Stream) finishRun() {
	if s.cr != nil {
		s.cr.Run.Finish()
	}
}

// Close ends the stream: the warnings of a run still open are reported.
func (s *Stream) Close() { s.finishRun() }

// KeepAliveFrame is the SSE comment frame KeepAlive writes. A consumer
// ignores a line that starts with a colon (the SSE and AG-UI specs require
// it to).
const KeepAliveFrame = ": keep-alive\n\n"

// KeepAlive writes KeepAliveFrame to the sink, to be flushed: the relay's
// own frame, for a consumer kept waiting by a silent producer (a proxy
// between them cuts a connection that stays silent too long). Call it only
// between frames, with nothing of a frame written since the last flush. It
// is counted as a comment written to the consumer, not read from the
// producer (Counts), and in Bytes, and the Tap sees it; it is not an event.
func (s *Stream) KeepAlive() error {
	if s.Counts != nil {
		s.Counts.add(ToConsumer, evComment, len(KeepAliveFrame))
	}
	return s.put([]byte(KeepAliveFrame), false) // a copy of its own: the writer borrows it until the flush
}

// Owed reports whether the consumer is owed a terminal event if the stream
// ends now: a run is open, or no run has started yet (the consumer asked for
// one and would read an empty stream as a finished run).
func (s *Stream) Owed() bool { return s.InRun || (s.Runs == 0 && s.Terminal == "") }

// Fail ends the stream's run with a RUN_ERROR of the relay's own,
// {"type":"RUN_ERROR","message":"agui-relay: <cause>","code":"<code>"}, when
// the consumer is owed one (see Owed); it reports whether it wrote it. The
// event goes through the run's translation like any other, so a consumer of
// any version reads it. Fail is for the relay's own failures: the producer's
// stream broke, went silent or sent a frame over the limit, or the relay is
// shutting down.
func (s *Stream) Fail(cause, code string) (bool, error) {
	if !s.Owed() {
		return false, nil
	}
	ev := []byte(`{"type":"RUN_ERROR","message":`)
	ev = translate.AppendJSONString(ev, "agui-relay: "+cause)
	ev = append(ev, `,"code":`...)
	ev = translate.AppendJSONString(ev, code)
	ev = append(ev, '}')
	raw := AppendFrame(nil, nil, ev)
	s.own = true
	defer func() { s.own = false }()
	return true, s.Frame(&Frame{Raw: raw, Data: raw[len("data: ") : len(raw)-2], Canonical: true})
}

// emit is the chain's output: it frames ev, of type t (read by the chain),
// after what the chain emitted before it for the frame being shaped (out),
// with the frame's fields before the first, and counts it. ev is borrowed,
// so it is copied.
func (s *Stream) emit(ev, t []byte) {
	n := len(s.out.frames)
	s.out.frames = AppendFrame(s.out.frames, s.fields, ev)
	s.fields = nil
	if tt := terminalType(t); tt != "" {
		s.out.terminal = tt
	}
	ti := 0
	if s.Counts != nil {
		ti = eventIndex(t)
	}
	s.countEvent(ti, len(s.out.frames)-n)
}

// countEvent counts one event written, n bytes framed, of label index ti
// (see eventIndex; unused when Counts is nil).
func (s *Stream) countEvent(ti, n int) {
	s.Events++
	if s.Counts != nil {
		s.Counts.add(ToConsumer, ti, n)
	}
}

func (s *Stream) write(b []byte) error { return s.put(b, false) }

// put writes b; borrowed: b is a frame's bytes as they came, which a
// borrower takes without a copy.
func (s *Stream) put(b []byte, borrowed bool) error {
	if s.Bytes == 0 && len(b) > len(bom) && string(b[:len(bom)]) == string(bom) {
		// The stream would begin with U+FEFF, which the consumer strips as
		// a byte-order mark: a frame whose first field name starts with it
		// (after the producer's own mark, which the scanner dropped) would
		// change meaning, "\uFEFFdata: …" becoming an event. A mark of the
		// relay's own goes first, for the consumer to strip instead (the
		// mark alone is not longer than itself: no second one).
		if err := s.put(bom, false); err != nil {
			return err
		}
	}
	s.Bytes += len(b)
	if s.Tap != nil {
		s.Tap.Wrote(b)
	}
	if borrowed && s.bw != nil {
		return s.bw.WriteBorrowed(b)
	}
	_, err := s.w.Write(b)
	return err
}
