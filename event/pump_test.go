package event

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/translate"
)

// opLog is a sink and a source that log what Pump does to them, in order:
// "r" a read, "w" a write, "f" a flush.
type opLog struct {
	ops    strings.Builder
	chunks []string
	out    bytes.Buffer
}

func (l *opLog) Read(p []byte) (int, error) {
	l.ops.WriteString("r")
	if len(l.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.chunks[0])
	l.chunks = l.chunks[1:]
	return n, nil
}

func (l *opLog) Write(p []byte) (int, error) {
	l.ops.WriteString("w")
	return l.out.Write(p)
}

func (l *opLog) Flush() error {
	l.ops.WriteString("f")
	return nil
}

// Pump flushes before every read and at no other time: the frames that
// arrived in one read are written one after the other, then flushed
// together, before the next read.
func TestPumpFlushesBeforeEveryRead(t *testing.T) {
	l := &opLog{chunks: []string{"data: 1\n\ndata: 2\n\n", "data: 3\n\n"}}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, l)
	rerr, werr := st.Pump(NewScanner(nil, 0), l)
	if rerr != io.EOF || werr != nil {
		t.Fatalf("Pump returned %v, %v; want io.EOF, nil", rerr, werr)
	}
	if got, want := l.ops.String(), "frwwfrwfr"; got != want {
		t.Errorf("operations %q, want %q", got, want)
	}
	if l.out.String() != "data: 1\n\ndata: 2\n\ndata: 3\n\n" {
		t.Errorf("wrote %q", l.out.String())
	}
}

// borrowingSink takes frames borrowed, as the relay's consumer writer does,
// and checks at each flush that their bytes are still what it was given.
type borrowingSink struct {
	t        *testing.T
	borrowed [][]byte // the slices taken since the last flush
	copies   []string // what they held when taken
	out      strings.Builder
}

func (s *borrowingSink) Write(p []byte) (int, error) {
	s.out.Write(p)
	return len(p), nil
}

func (s *borrowingSink) WriteBorrowed(p []byte) error {
	s.borrowed = append(s.borrowed, p)
	s.copies = append(s.copies, string(p))
	return nil
}

func (s *borrowingSink) Flush() error {
	for i, p := range s.borrowed {
		if string(p) != s.copies[i] {
			s.t.Errorf("a borrowed frame changed before the flush: %q, taken as %q", p, s.copies[i])
		}
		s.out.Write(p)
	}
	s.borrowed, s.copies = s.borrowed[:0], s.copies[:0]
	return nil
}

// Frames passed through are written from the scanner's buffer: Pump must
// flush them before a read moves its bytes. Reads of half the room make
// most Fills move what is left to the buffer's start.
func TestPumpFlushesBorrowedFramesBeforeTheBufferMoves(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"%d\"}\n\n", i)
	}
	in := b.String()
	s := &borrowingSink{t: t}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, s)
	pumpAll(t, st, iotest.HalfReader(strings.NewReader(in)))
	s.Flush() //nolint:errcheck // never fails
	if s.out.String() != in {
		t.Errorf("wrote %q\nwant %q", s.out.String(), in)
	}
}

// Pump returns, both errors nil, after the frame that ends a run, and goes
// on where it stopped when called again.
func TestPumpPausesAtTheEndOfARun(t *testing.T) {
	l := &opLog{chunks: []string{testkit.RunStarted + testkit.RunFinished + testkit.ContentEvent}}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, l)
	sc := NewScanner(nil, 0)
	if rerr, werr := st.Pump(sc, l); rerr != nil || werr != nil || st.Terminal != "RUN_FINISHED" || st.Events != 2 {
		t.Fatalf("first Pump: %v, %v, terminal %q, %d events", rerr, werr, st.Terminal, st.Events)
	}
	if rerr, werr := st.Pump(sc, l); rerr != io.EOF || werr != nil || st.Events != 3 {
		t.Fatalf("second Pump: %v, %v, %d events", rerr, werr, st.Events)
	}
	if l.out.String() != testkit.RunStarted+testkit.RunFinished+testkit.ContentEvent {
		t.Errorf("wrote %q", l.out.String())
	}
}

// politeSource is a polled source: syscall.EAGAIN whenever it has nothing.
type politeSource struct{ pending []string }

func (p *politeSource) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		return 0, syscall.EAGAIN
	}
	n := copy(b, p.pending[0])
	p.pending = p.pending[1:]
	return n, nil
}

// A polled source that has nothing makes Pump return syscall.EAGAIN, having
// flushed what came before and lost nothing: called again once the
// source has input, it goes on, a frame split across the wait whole.
func TestPumpReturnsWhenAPolledSourceWouldBlock(t *testing.T) {
	src := &politeSource{pending: []string{testkit.ContentEvent + testkit.ContentEvent[:20]}}
	var out bytes.Buffer
	l := &opLog{}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &flushCounter{Writer: &out, log: l})
	sc := NewIdleScanner(nil, 0)
	sc.Polled = true
	if rerr, werr := st.Pump(sc, src); rerr != syscall.EAGAIN || werr != nil {
		t.Fatalf("Pump returned %v, %v; want syscall.EAGAIN", rerr, werr)
	}
	if out.String() != testkit.ContentEvent || l.ops.String() != "ff" {
		t.Fatalf("before the wait: wrote %q, flushes %q", out.String(), l.ops.String())
	}
	src.pending = []string{testkit.ContentEvent[20:]}
	if rerr, _ := st.Pump(sc, src); rerr != syscall.EAGAIN || out.String() != testkit.ContentEvent+testkit.ContentEvent {
		t.Fatalf("after the wait: %v, wrote %q", rerr, out.String())
	}
	if sc.buf != nil {
		t.Error("the scanner holds a buffer while it waits with nothing buffered")
	}
}

// flushCounter is a sink that logs its flushes.
type flushCounter struct {
	io.Writer
	log *opLog
}

func (f *flushCounter) Flush() error { return f.log.Flush() }

// failingSink fails every flush.
type failingSink struct{ bytes.Buffer }

var errSinkGone = errors.New("the consumer is gone")

func (*failingSink) Flush() error { return errSinkGone }

// What stops Pump says which side it came from: the sink's error as
// writeErr, the source's as readErr.
func TestPumpTellsTheSinksErrorFromTheSources(t *testing.T) {
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &failingSink{})
	if rerr, werr := st.Pump(NewScanner(nil, 0), strings.NewReader(testkit.ContentEvent)); rerr != nil || werr != errSinkGone {
		t.Errorf("a failed flush: %v, %v", rerr, werr)
	}
	broken := errors.New("connection reset")
	var out bytes.Buffer
	st = (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &out)
	src := io.MultiReader(strings.NewReader(testkit.ContentEvent), iotest.ErrReader(broken))
	if rerr, werr := st.Pump(NewScanner(nil, 0), src); rerr != broken || werr != nil || out.String() != testkit.ContentEvent {
		t.Errorf("a broken source: %v, %v, wrote %q", rerr, werr, out.String())
	}
}

// flushTap is a Tap that records what Flushed was told.
type flushTap struct{ flushed []int }

func (*flushTap) Read([]byte)                                                              {}
func (*flushTap) Wrote([]byte)                                                             {}
func (*flushTap) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}
func (*flushTap) Warned(translate.Warning)                                                 {}
func (t *flushTap) Flushed(events int)                                                     { t.flushed = append(t.flushed, events) }

// The tap is told of every flush Pump makes, with the events written so
// far.
func TestPumpTellsTheTapOfEachFlush(t *testing.T) {
	l := &opLog{chunks: []string{"data: 1\n\ndata: 2\n\n", "data: 3\n\n"}}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, l)
	tap := &flushTap{}
	st.Tap = tap
	if rerr, _ := st.Pump(NewScanner(nil, 0), l); rerr != io.EOF {
		t.Fatal(rerr)
	}
	if fmt.Sprint(tap.flushed) != "[0 2 3]" {
		t.Errorf("Flushed with %v, want [0 2 3]", tap.flushed)
	}
}

// notingLog is an opLog that is also a ReadNoter ("n") and a Tap that logs
// what it is shown read ("t" and the bytes).
type notingLog struct{ opLog }

func (l *notingLog) NoteRead()                                                                { l.ops.WriteString("n") }
func (l *notingLog) Wrote([]byte)                                                             {}
func (l *notingLog) Flushed(int)                                                              {}
func (l *notingLog) Translated(*translate.Step, string, negotiate.Version, negotiate.Version) {}
func (l *notingLog) Warned(translate.Warning)                                                 {}
func (l *notingLog) tapRead(p []byte)                                                         { fmt.Fprintf(&l.ops, "t%q", p) }

// notingTap shows the tap's reads to the log.
type notingTap struct{ *notingLog }

func (t notingTap) Read(p []byte) { t.tapRead(p) }

// Pump tells a source that is a ReadNoter of each read just before it
// (the relay's idle timer), and shows the tap what each read brought, as
// the relay's loop, which is Pump, needs.
func TestPumpNotesEachReadAndTapsWhatCame(t *testing.T) {
	l := &notingLog{opLog{chunks: []string{"data: 1\n\n", "data: 2\n\n"}}}
	st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &l.opLog)
	st.Tap = notingTap{l}
	if rerr, werr := st.Pump(NewScanner(nil, 0), l); rerr != io.EOF || werr != nil {
		t.Fatalf("Pump returned %v, %v; want io.EOF, nil", rerr, werr)
	}
	want := `fnrt"data: 1\n\n"wfnrt"data: 2\n\n"wfnr`
	if got := l.ops.String(); got != want {
		t.Errorf("operations %s, want %s", got, want)
	}
}
