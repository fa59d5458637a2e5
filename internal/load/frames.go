package load

import "bytes"

// FrameSplitter cuts an SSE byte stream into frames at blank lines and
// hands each frame's data to a callback. Data split across several "data:"
// lines is joined with "\n" as the SSE rules say; comment and other field
// lines are ignored. Lines end in LF, CRLF or CR (sse-starlette, the
// server of many Python agents, writes CRLF); a stream whose first line
// ends in CR is read as such throughout, after the first line's end is
// rewritten as LF: JSON data holds no raw CR, so every CR is framing.
type FrameSplitter struct {
	pending []byte
	joined  []byte
	norm    []byte
	mode    uint8 // lineUnknown until the first line end
	cr      bool  // in lineCR mode: the last piece ended with a CR
	// OnEvent receives each event's data, borrowed until it returns.
	OnEvent func(data []byte)
	// Frames counts frames without data (comments, keep-alives).
	Empty int64
}

const (
	lineUnknown = iota
	lineLF
	lineCR
)

// Write feeds stream bytes.
func (s *FrameSplitter) Write(p []byte) {
	if s.mode == lineUnknown {
		if i := bytes.IndexAny(p, "\r\n"); i >= 0 {
			s.mode = lineLF
			if p[i] == '\r' {
				s.mode = lineCR
			}
		}
	}
	if s.mode == lineCR {
		p = s.normalize(p)
	}
	if len(s.pending) > 0 {
		// Complete the pending frame first, searching only near the seam.
		from := len(s.pending) - 1
		s.pending = append(s.pending, p...)
		i := bytes.Index(s.pending[from:], []byte("\n\n"))
		if i < 0 {
			return
		}
		end := from + i
		s.frame(s.pending[:end])
		rest := s.pending[end+2:]
		p = rest
		// Continue on the remainder without copying it again.
		s.scan(p, true)
		return
	}
	s.scan(p, false)
}

func (s *FrameSplitter) scan(p []byte, fromPending bool) {
	for {
		// One pass finds both the frame's end and, for the frame of one
		// line every AG-UI encoder writes, that it is one.
		i := bytes.IndexByte(p, '\n')
		if i < 0 || i+1 == len(p) {
			break
		}
		if p[i+1] == '\n' {
			s.oneLine(p[:i])
			p = p[i+2:]
			continue
		}
		j := bytes.Index(p[i+1:], []byte("\n\n"))
		if j < 0 {
			break
		}
		s.frame(p[:i+1+j])
		p = p[i+1+j+2:]
	}
	if fromPending {
		// p aliases s.pending: move it to the front.
		n := copy(s.pending, p)
		s.pending = s.pending[:n]
		return
	}
	s.pending = append(s.pending[:0], p...)
}

// normalize rewrites the CRLF and CR line ends of p as LF, into s.norm.
func (s *FrameSplitter) normalize(p []byte) []byte {
	out := s.norm[:0]
	for _, c := range p {
		if s.cr {
			s.cr = false
			if c == '\n' {
				continue
			}
		}
		if c == '\r' {
			s.cr, c = true, '\n'
		}
		out = append(out, c)
	}
	s.norm = out
	return out
}

// oneLine handles a frame of one line.
func (s *FrameSplitter) oneLine(f []byte) {
	if bytes.HasPrefix(f, []byte("data: ")) {
		s.OnEvent(f[6:])
		return
	}
	s.frame(f)
}

func (s *FrameSplitter) frame(f []byte) {
	// Fast path: one "data: " line, as every AG-UI encoder writes.
	if bytes.HasPrefix(f, []byte("data: ")) && (len(f) < 7 || bytes.IndexByte(f[6:], '\n') < 0) {
		s.OnEvent(f[6:])
		return
	}
	s.joined = s.joined[:0]
	n := 0
	for len(f) > 0 {
		line := f
		if i := bytes.IndexByte(f, '\n'); i >= 0 {
			line, f = f[:i], f[i+1:]
		} else {
			f = nil
		}
		if bytes.HasPrefix(line, []byte("data:")) {
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if n > 0 {
				s.joined = append(s.joined, '\n')
			}
			s.joined = append(s.joined, v...)
			n++
		}
	}
	if n == 0 {
		s.Empty++
		return
	}
	s.OnEvent(s.joined)
}

// Pending reports whether a frame was started and not finished.
func (s *FrameSplitter) Pending() bool { return len(s.pending) > 0 }

// Reset drops a frame started and not finished, for the next stream.
func (s *FrameSplitter) Reset() {
	s.pending = s.pending[:0]
	s.mode, s.cr = lineUnknown, false
}
