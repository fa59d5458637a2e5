package load

import "bytes"

// FrameSplitter cuts an SSE byte stream into frames at blank lines ("\n\n")
// and hands each frame's data to a callback. Data split across several
// "data:" lines is joined with "\n" as the SSE rules say; comment and other
// field lines are ignored.
type FrameSplitter struct {
	pending []byte
	joined  []byte
	// OnEvent receives each event's data, borrowed until it returns.
	OnEvent func(data []byte)
	// Frames counts frames without data (comments, keep-alives).
	Empty int64
}

// Write feeds stream bytes.
func (s *FrameSplitter) Write(p []byte) {
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
		i := bytes.Index(p, []byte("\n\n"))
		if i < 0 {
			break
		}
		s.frame(p[:i])
		p = p[i+2:]
	}
	if fromPending {
		// p aliases s.pending: move it to the front.
		n := copy(s.pending, p)
		s.pending = s.pending[:n]
		return
	}
	s.pending = append(s.pending[:0], p...)
}

func (s *FrameSplitter) frame(f []byte) {
	// Fast path: one "data: " line, as every AG-UI encoder writes.
	if bytes.HasPrefix(f, []byte("data: ")) && bytes.IndexByte(f, '\n') < 0 {
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
func (s *FrameSplitter) Reset() { s.pending = s.pending[:0] }
