package event

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
)

// ErrFrameTooLarge is returned by Scanner.Next when a frame grows past the
// scanner's limit. The frame is refused, not buffered without end.
var ErrFrameTooLarge = errors.New("relay: event frame exceeds the size limit")

// Frame is one server-sent-events frame: the lines up to a blank line.
//
// Every slice in a Frame is borrowed from the scanner's buffer: it is valid
// until the scanner next reads (Fill, or Next when it needs input), and a
// caller that keeps it must copy.
type Frame struct {
	// Raw is the frame exactly as it arrived, terminators included.
	Raw []byte
	// Data is the frame's data lines joined with "\n" (WHATWG semantics),
	// or nil when the frame has no data line (a comment or keep-alive).
	Data []byte
	// Fields holds the frame's other lines (comments, event:, id:, retry:,
	// unknown fields), each terminated by "\n", in their order. They are
	// kept so that a re-framed frame loses nothing.
	Fields []byte
	// Canonical reports that Raw is byte for byte what AppendFrame writes for
	// this frame: LF line endings, "data: " with its space, fields before
	// data. A canonical frame whose payload is unchanged is copied as Raw.
	Canonical bool
}

// HasData reports whether the frame carries an event payload.
func (f *Frame) HasData() bool { return f.Data != nil }

// Scanner splits a byte stream into SSE frames. It accepts LF, CRLF and CR
// line endings, a leading byte-order mark, comments, any field and multi-line
// data, as the WHATWG event-stream format does.
//
// It is used in one of two ways. Passive (Stream.Pump does this): Scan
// returns the frames of what is buffered, and when it has none, the caller
// flushes whatever it wrote from their bytes and calls Fill, which reads
// the source once; the buffer moves only inside Fill. Pulling (the
// commands that scan a file): Next reads the reader given to NewScanner
// whenever it needs input.
//
// A Scanner is not safe for concurrent use.
type Scanner struct {
	r   io.Reader // what Next reads; nil for a scanner used with Fill alone
	max int

	buf        []byte
	start, end int // unconsumed bytes are buf[start:end]
	readErr    error
	bomDone    bool

	// The search for the end of the frame at buf[start:] resumes where it
	// stopped, so that a large frame arriving in small reads is scanned
	// once, not once per read. Both are offsets from start: lineStart is the
	// start of the first line not yet known to be complete, scanned how far
	// the search for its terminator got.
	lineStart, scanned int
	skipLF             bool // the last frame ended in CR at the end of the input

	// cr is the offset in buf of the first CR at or after start, end when
	// there is none; below start when not known (-1 after a Fill), so that
	// fastFrame searches a burst for CRs once, not every frame for its own.
	cr int

	data   []byte // scratch: joined data of a non-canonical frame
	fields []byte // scratch: normalised field lines

	// The buffer starts at base bytes, grows while reads fill it (a burst)
	// up to burstSize, and for a frame up to the limit; it shrinks back to
	// base once reads have stayed small for a while (see Fill).
	base       int
	grow       bool // the last read filled all the room it was given
	smallReads int  // reads in a row that filled under a quarter of the buffer

	// A scanner made by NewIdleScanner holds no buffer while it waits for
	// input with nothing buffered: its base-size buffer goes back to
	// scanPool and it waits in a one-byte read. pooled points at the
	// buffer when it came from a pool (scanPool, burstPools).
	releaseIdle bool
	pooled      *[]byte
	one         [1]byte

	pushed []byte // what Push has still to copy into buf
	fresh  int    // where in buf the bytes the last Fill read start (Filled)

	// Polled, when set, says the source never blocks but returns
	// syscall.EAGAIN, the would-block error, when nothing has arrived (the
	// relay's polled producer body, wire.Body); Fill returns it, having lost
	// nothing, and is called again once the source has input. Waiting costs
	// no read: the base buffer is taken for each read and goes back to the
	// pool when the read finds nothing. Set it before the first Fill.
	Polled bool
}

// Scanner buffer sizes: every stream holds baseSize while it is idle;
// a stream whose reads keep filling the buffer gets up to burstSize, so
// that a fast producer is read (and its events written) in large blocks.
const (
	baseSize  = 4 << 10
	burstSize = 32 << 10
	// smallReadsToShrink reads under a quarter of the buffer in a row
	// shrink it back to baseSize.
	smallReadsToShrink = 16
)

// NewScanner returns a scanner whose Next reads r (nil when the caller
// fills it, see Fill) and that refuses frames larger than
// maxFrame bytes (raw, terminators included, except the LF of the CRLF that
// ends a frame: a CR ends it at once, and that LF may come in a later read,
// so counting it would make the verdict depend on how the stream was cut).
// maxFrame <= 0 means 10 MiB.
func NewScanner(r io.Reader, maxFrame int) *Scanner {
	if maxFrame <= 0 {
		maxFrame = 10 << 20
	}
	size := min(baseSize, maxFrame+2)
	return &Scanner{r: r, max: maxFrame, buf: make([]byte, size), base: size, cr: -1}
}

// scanPool holds the base-size buffers of scanners waiting for input.
var scanPool = sync.Pool{New: func() any {
	b := make([]byte, baseSize)
	return &b
}}

// burstPools hold the buffers of bursts, 2, 4, … times baseSize up to
// burstSize: a fast stream grows into them and gives them back when it
// shrinks or ends, instead of leaving tens of KiB of garbage per run.
var burstPools [burstClasses]sync.Pool

const burstClasses = 4 // 8, 16, 32, 64 KiB: burstSize and what may come

// burstClass returns the pool of a buffer of size bytes, -1 for none.
func burstClass(size int) int {
	for c, n := 0, 2*baseSize; c < burstClasses; c, n = c+1, 2*n {
		if size == n {
			return c
		}
	}
	return -1
}

// getBuf returns a buffer of size bytes, pooled when a pool has that size.
func getBuf(size int) ([]byte, *[]byte) {
	if size == baseSize {
		v := scanPool.Get().(*[]byte)
		return *v, v
	}
	c := burstClass(size)
	if c < 0 {
		return make([]byte, size), nil
	}
	if v, ok := burstPools[c].Get().(*[]byte); ok {
		return *v, v
	}
	v := new([]byte)
	*v = make([]byte, size)
	return *v, v
}

// putBuf gives a buffer from getBuf or scanPool back.
func putBuf(pooled *[]byte) {
	if len(*pooled) == baseSize {
		scanPool.Put(pooled)
	} else if c := burstClass(len(*pooled)); c >= 0 {
		burstPools[c].Put(pooled)
	}
}

// NewIdleScanner is NewScanner for a stream that may stay silent for long:
// while it waits for input with nothing buffered it holds no buffer of its
// own (see fillIdle). It allocates none until the first byte arrives.
func NewIdleScanner(r io.Reader, maxFrame int) *Scanner {
	if maxFrame <= 0 {
		maxFrame = 10 << 20
	}
	if maxFrame+2 < baseSize {
		return NewScanner(r, maxFrame)
	}
	return &Scanner{r: r, max: maxFrame, base: baseSize, releaseIdle: true, cr: -1}
}

// MaxFrame returns the scanner's frame size limit (see NewScanner).
func (s *Scanner) MaxFrame() int { return s.max }

// Buffered returns how many received bytes are not yet returned as frames.
func (s *Scanner) Buffered() int { return s.end - s.start }

// Next returns the next frame, reading the scanner's reader whenever it
// needs input (see Scan for the end of the stream). Its frame is valid
// until the next call.
func (s *Scanner) Next() (Frame, error) {
	var f Frame
	err := s.next(&f) // small enough to inline: no copy of the frame out
	return f, err
}

func (s *Scanner) next(f *Frame) error {
	for {
		if ok, err := s.Scan(f); ok || err != nil {
			return err
		}
		if err := s.Fill(s.r); err != nil {
			return err
		}
	}
}

// Scan looks for the next frame in what is buffered, without reading, and
// writes it into *f. It reports true when it found one; false when the
// buffer holds no complete frame, with err nil (Fill, then Scan again) or
// why no frame will come: the source's end once every frame before it was
// returned (io.EOF at a clean end, where a frame still open is returned
// complete first, as the reference consumers deliver it; an unfinished
// frame is dropped when the source broke), or ErrFrameTooLarge. On false
// *f is left unchanged.
func (s *Scanner) Scan(f *Frame) (bool, error) {
	if !s.bomDone && (s.end-s.start >= 3 || s.readErr != nil) {
		s.bomDone = true
		if bytes.HasPrefix(s.buf[s.start:s.end], bom) {
			s.advance(len(bom))
		}
	}
	if s.skipLF && s.end > s.start {
		s.skipLF = false
		if s.buf[s.start] == '\n' {
			s.advance(1)
		}
	}
	if s.bomDone {
		fresh := s.lineStart == 0 && s.scanned == 0
		if fresh && s.fastFrame(f) {
			return true, nil
		}
		if s.readErr != nil || s.frameEnds() {
			if !fresh && s.fastFrame(f) {
				return true, nil
			}
			g, complete, err := s.slowFrame()
			if complete {
				*f = g
				return true, nil
			}
			if err != nil {
				return false, err
			}
		} else if s.end-s.start > s.max {
			return false, ErrFrameTooLarge
		}
	}
	// Nothing more will come after a read error; at a clean end slowFrame
	// has returned every frame, so only blank lines or a broken frame remain.
	return false, s.readErr
}

// advance consumes n bytes and restarts the search for a frame's end.
func (s *Scanner) advance(n int) {
	s.start += n
	s.lineStart, s.scanned = 0, 0
}

// frameEnds reports whether the buffer holds a blank line, which ends the
// frame at buf[start:] (or is a blank line before it). It resumes the search
// where the previous call stopped.
func (s *Scanner) frameEnds() bool {
	b := s.buf[s.start:s.end]
	for {
		if s.scanned == s.lineStart {
			if s.lineStart == len(b) {
				return false
			}
			if c := b[s.lineStart]; c == '\n' || c == '\r' {
				return true
			}
		}
		i := bytes.IndexAny(b[s.scanned:], "\r\n")
		if i < 0 {
			s.scanned = len(b)
			return false
		}
		t := s.scanned + i
		next := t + 1
		if b[t] == '\r' {
			if next == len(b) {
				s.scanned = t // CR or CRLF? Look again when more arrives.
				return false
			}
			if b[next] == '\n' {
				next++
			}
		}
		s.lineStart, s.scanned = next, next
	}
}

var bom = []byte("\xEF\xBB\xBF")

// fastFrame recognises the frame every AG-UI encoder writes,
// "data: <json>\n\n", without copying.
func (s *Scanner) fastFrame(f *Frame) bool {
	b := s.buf[s.start:s.end]
	if len(b) < 8 || string(b[:6]) != "data: " {
		return false
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 || nl+1 >= len(b) || b[nl+1] != '\n' || s.crBefore(s.start+nl) {
		return false
	}
	if nl+2 > s.max {
		return false // slowFrame reports the oversized frame
	}
	// Field by field, not a composite literal (bench/README.md, History).
	f.Raw, f.Data, f.Fields, f.Canonical = b[:nl+2], b[6:nl:nl], nil, true
	s.advance(nl + 2)
	return true
}

// slowFrame parses one frame line by line. It reports complete=false when
// the buffer ends before the frame does (more input is needed), unless the
// stream ended cleanly, in which case what is there is the final frame.
func (s *Scanner) slowFrame() (f Frame, complete bool, err error) {
	b := s.buf[s.start:s.end]
	atEOF := s.readErr == io.EOF
	s.data = s.data[:0]
	s.fields = s.fields[:0]
	hasData := false
	canonical := true
	sawData := false
	pos := 0
	for {
		i := bytes.IndexAny(b[pos:], "\r\n")
		var line []byte
		next := 0
		switch {
		case i < 0:
			if !atEOF {
				return Frame{}, false, s.checkSize(len(b))
			}
			if pos == len(b) {
				if !hasData && len(s.fields) == 0 {
					return Frame{}, false, nil // only blank lines were left
				}
				// The stream ended at a line boundary inside an open frame.
				return s.finish(b, pos, hasData, false)
			}
			line, next = b[pos:], len(b)
			if next > s.max {
				return Frame{}, false, ErrFrameTooLarge
			}
			canonical = false
		case b[pos+i] == '\r':
			if pos+i+1 == len(b) && !atEOF {
				if i > 0 {
					return Frame{}, false, s.checkSize(len(b)) // is it CRLF? need one more byte
				}
				// A blank line ending in CR at the end of the input: the
				// frame is complete now, whether an LF follows or not (if
				// it does, the next call drops it). Waiting for that byte
				// would hold the event back until the producer's next one.
				s.skipLF = true
			}
			line = b[pos : pos+i]
			next = pos + i + 1
			if next > s.max {
				return Frame{}, false, ErrFrameTooLarge
			}
			// The LF of a CRLF is not counted (NewScanner): a line after
			// it is, so only the frame's last one goes uncounted.
			if next < len(b) && b[next] == '\n' {
				next++
			}
			canonical = false
		default:
			line, next = b[pos:pos+i], pos+i+1
			if next > s.max {
				return Frame{}, false, ErrFrameTooLarge
			}
		}
		pos = next
		if len(line) == 0 {
			if !hasData && len(s.fields) == 0 {
				// Blank lines between frames carry nothing; skip them.
				s.advance(pos)
				b = b[pos:]
				pos = 0
				canonical = true // a CRLF blank line before a frame is not part of it
				if len(b) == 0 {
					return Frame{}, false, nil
				}
				continue
			}
			return s.finish(b, pos, hasData, canonical)
		}
		name, value, isData := splitField(line)
		if isData {
			if hasData {
				s.data = append(s.data, '\n')
			}
			hasData, sawData = true, true
			s.data = append(s.data, value...)
			if name != "data: " {
				canonical = false // "data:" without its space, or a bare "data"
			}
			continue
		}
		if sawData {
			canonical = false // re-framing writes fields before data
		}
		s.fields = append(s.fields, line...)
		s.fields = append(s.fields, '\n')
	}
}

func (s *Scanner) finish(b []byte, pos int, hasData, canonical bool) (Frame, bool, error) {
	f := Frame{Raw: b[:pos:pos], Fields: s.fields, Canonical: canonical && pos > 0 && b[pos-1] == '\n'}
	if hasData {
		f.Data = s.data
		if f.Data == nil {
			f.Data = []byte{}
		}
	}
	s.advance(pos)
	return f, true, nil
}

// splitField splits a line into its field name (with the colon and one
// optional space, for data lines) and value.
func splitField(line []byte) (name string, value []byte, isData bool) {
	if string(line) == "data" {
		return "data", nil, true
	}
	if len(line) >= 5 && string(line[:5]) == "data:" {
		if len(line) > 5 && line[5] == ' ' {
			return "data: ", line[6:], true
		}
		return "data:", line[5:], true
	}
	return "", nil, false
}

// crBefore reports whether buf[start:limit] holds a CR.
func (s *Scanner) crBefore(limit int) bool {
	if s.cr < s.start {
		if i := bytes.IndexByte(s.buf[s.start:s.end], '\r'); i >= 0 {
			s.cr = s.start + i
		} else {
			s.cr = s.end
		}
	}
	return s.cr < limit
}

func (s *Scanner) checkSize(n int) error {
	if n > s.max {
		return ErrFrameTooLarge
	}
	return nil
}

// Fill reads src once (retrying reads that return nothing), compacting,
// growing or shrinking the buffer first as needed: every Frame returned
// before is dead once it is called, since their bytes may move. It returns
// syscall.EAGAIN when a polled source has nothing yet (Polled),
// ErrFrameTooLarge when a frame outgrew the limit; a read error (io.EOF included) is kept, and
// Scan returns it once the frames read before it are out. After that Fill
// does nothing.
func (s *Scanner) Fill(src io.Reader) error {
	s.fresh = s.end
	if s.readErr != nil {
		return nil
	}
	s.cr = -1 // bytes move and arrive
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:s.end])
		s.start, s.end = 0, n
		s.fresh = n
	}
	if s.Polled && s.buf == nil {
		s.buf, s.pooled = getBuf(baseSize)
	}
	// Nothing buffered at the base size, no burst: wait without a buffer.
	idle := !s.Polled && s.releaseIdle && s.end == 0 && len(s.buf) <= baseSize && !s.grow
	switch {
	case idle:
	case s.end == len(s.buf): // a frame larger than the buffer
		if len(s.buf) >= s.max+2 {
			return ErrFrameTooLarge
		}
		s.resize(min(2*len(s.buf), s.max+2))
	case s.grow && len(s.buf) < burstSize && len(s.buf) < s.max+2: // a burst
		s.resize(min(2*len(s.buf), burstSize, s.max+2))
	case s.smallReads >= smallReadsToShrink && len(s.buf) > s.base && s.end <= s.base/2:
		s.resize(s.base)
	}
	if idle {
		return s.fillIdle(src)
	}
	for tries := 0; ; tries++ {
		room := len(s.buf) - s.end
		n, err := src.Read(s.buf[s.end:])
		if err == syscall.EAGAIN {
			if s.end == 0 && s.pooled != nil && len(s.buf) == baseSize {
				scanPool.Put(s.pooled)
				s.pooled, s.buf, s.grow = nil, nil, false
			}
			return err
		}
		s.end += n
		s.sized(n, n == room)
		if err != nil {
			s.readErr = err
			return nil
		}
		if n > 0 {
			return nil
		}
		if tries > 100 {
			s.readErr = io.ErrNoProgress
			return nil
		}
	}
}

// Filled returns the bytes the last Fill read (none when it read nothing),
// borrowed from the buffer until the next Fill, as a Frame's are.
func (s *Scanner) Filled() []byte { return s.buf[s.fresh:s.end] }

// Push scans bytes the caller read itself, for a caller that is handed
// them (the load generator's HTTP client), and calls frame with each frame
// they complete, its bytes borrowed until frame returns. The frames p
// completes when nothing is buffered are scanned where they are; only a
// frame left open by the Push before, up to its end, and one p leaves
// open, are copied into the buffer, where an open frame waits for the next
// Push. End ends the stream. Push returns ErrFrameTooLarge when a frame
// outgrows the limit, after which the scanner takes nothing more.
func (s *Scanner) Push(p []byte, frame func(Frame)) error {
	var f Frame
	for {
		if len(p) > 0 && s.start == s.end && s.readErr == nil && s.buf != nil {
			var err error
			if p, err = s.scanInPlace(p, frame); err != nil {
				return err
			}
		}
		ok, err := s.Scan(&f)
		switch {
		case err != nil:
			return err
		case ok:
			frame(f)
			continue
		case len(p) == 0:
			return nil
		}
		// A frame is open in the buffer: it takes p a line at a time (and
		// the byte after, which ends it if it is a blank line), so that the
		// frames after it are scanned in place.
		take := len(p)
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			take = min(i+2, len(p))
		}
		s.pushed = p[:take]
		err = s.Fill(pushSource{s})
		p, s.pushed = p[take-len(s.pushed):], nil
		if err != nil {
			return err
		}
	}
}

// scanInPlace scans p as if it were the buffer, which holds nothing, calls
// frame with each frame it completes and returns the rest of p, a frame
// left open.
func (s *Scanner) scanInPlace(p []byte, frame func(Frame)) ([]byte, error) {
	own := s.buf
	s.buf, s.start, s.end, s.cr = p, 0, len(p), -1
	s.lineStart, s.scanned = 0, 0
	var f Frame
	var err error
	for {
		if s.bomDone && !s.skipLF {
			s.canonicalFrames(frame)
		}
		var ok bool
		if ok, err = s.Scan(&f); !ok {
			break
		}
		frame(f)
	}
	rest := p[s.start:]
	s.buf, s.start, s.end, s.cr = own, 0, 0, -1
	s.lineStart, s.scanned = 0, 0 // the search starts again in the buffer
	return rest, err
}

// canonicalFrames calls frame with each of the frames at the start of the
// buffer that every AG-UI encoder writes, back to back (fastFrame's),
// without Scan's checks between them.
func (s *Scanner) canonicalFrames(frame func(Frame)) {
	var f Frame
	for s.fastFrame(&f) {
		frame(f)
	}
}

// Reset readies the scanner for another stream, keeping its buffer: what
// is buffered and the end of the last stream are forgotten. Not after
// Release.
func (s *Scanner) Reset() {
	s.start, s.end, s.readErr, s.bomDone, s.skipLF = 0, 0, nil, false, false
	s.lineStart, s.scanned, s.cr, s.pushed = 0, 0, -1, nil
}

// End ends a stream given by Push at a clean end: frame is called with
// the frame left open, if any, as Scan returns it at the source's end.
func (s *Scanner) End(frame func(Frame)) error {
	s.Fill(pushSource{}) // the end: io.EOF, kept
	var f Frame
	for {
		ok, err := s.Scan(&f)
		if !ok {
			if err == io.EOF {
				err = nil
			}
			return err
		}
		frame(f)
	}
}

// pushSource is Fill's source in Push: the bytes pushed, or with no
// scanner, the end of the stream.
type pushSource struct{ s *Scanner }

func (r pushSource) Read(b []byte) (int, error) {
	if r.s == nil {
		return 0, io.EOF
	}
	n := copy(b, r.s.pushed)
	r.s.pushed = r.s.pushed[n:]
	return n, nil
}

// sized notes how a read of n bytes filled the buffer (filled: all the room
// it was given), for Fill's decisions to grow or shrink it.
func (s *Scanner) sized(n int, filled bool) {
	s.grow = filled
	if n < len(s.buf)/4 {
		s.smallReads++
	} else {
		s.smallReads = 0
	}
}

// fillIdle waits for input with nothing buffered and no buffer held: the
// base-size buffer goes back to the pool for the wait, in a one-byte read,
// and one comes from the pool for the rest of what has arrived (a second
// read, which the producer's client serves from what it has buffered).
// Every Frame returned before is dead by now (see Fill).
func (s *Scanner) fillIdle(src io.Reader) error {
	if s.pooled != nil {
		putBuf(s.pooled)
		s.pooled = nil
	}
	s.buf = nil
	var n int
	var err error
	for tries := 0; ; tries++ {
		if n, err = src.Read(s.one[:]); n > 0 || err != nil {
			break
		}
		if tries > 100 {
			s.readErr = io.ErrNoProgress
			return nil
		}
	}
	s.buf, s.pooled = getBuf(baseSize)
	s.buf[0] = s.one[0]
	s.fresh, s.end = 0, n
	if err != nil {
		s.readErr = err
		return nil
	}
	m, err := src.Read(s.buf[1:])
	s.end += m
	s.sized(n+m, m == len(s.buf)-1)
	if err != nil {
		s.readErr = err
	}
	return nil
}

// resize moves the unconsumed bytes, at the start of the buffer, into a
// buffer of size bytes.
func (s *Scanner) resize(size int) {
	b, pooled := getBuf(size)
	copy(b, s.buf[:s.end])
	if s.pooled != nil {
		putBuf(s.pooled)
	}
	s.buf, s.pooled = b, pooled
	s.smallReads = 0
}

// Release gives the scanner's buffer back to its pool. The scanner must not
// be used after, nor any Frame it returned (their bytes are the buffer's).
func (s *Scanner) Release() {
	if s.pooled != nil {
		putBuf(s.pooled)
		s.pooled = nil
	}
	s.buf, s.start, s.end, s.cr = nil, 0, 0, -1
}

// AppendFrame appends the canonical framing of an event to dst: the frame's
// fields (comments, id:, …) first, then one "data: " line per line of data,
// then the blank line. fields may be nil.
func AppendFrame(dst, fields, data []byte) []byte {
	dst = append(dst, fields...)
	for {
		i := bytes.IndexByte(data, '\n')
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, '\n', '\n')
}

// String describes a frame for logs without dumping its payload.
func (f Frame) String() string {
	return fmt.Sprintf("frame{raw:%dB data:%dB canonical:%v}", len(f.Raw), len(f.Data), f.Canonical)
}
