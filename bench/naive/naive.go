// Package naive is the event loop of the relay design agui-relay rejected,
// kept as a baseline: every event is decoded into a map with encoding/json,
// translated on the map, and encoded again.
package naive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// Mode is the translation applied.
type Mode string

// The modes: none re-encodes only; up turns THINKING_* into REASONING_*
// for a 1.0 consumer; down shapes 1.0 events for a 0.0.45 consumer.
const (
	None Mode = "none"
	Up   Mode = "up"
	Down Mode = "down"
)

// Shaper translates one stream.
type Shaper struct {
	Mode Mode
	n    int
	id   string
	data []byte
}

// Copy reads SSE frames from r and writes the shaped events to w, calling
// flush whenever r has nothing buffered (flush when drained, as agui-relay
// does). It returns the first read error other than io.EOF.
func (s *Shaper) Copy(r *bufio.Reader, w *bufio.Writer, flush func()) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(s.data) > 0 {
				s.Event(w, s.data)
				s.data = s.data[:0]
			}
			if r.Buffered() == 0 && flush != nil {
				flush()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
		}
	}
}

// Event decodes, translates and re-encodes one event as an SSE frame.
func (s *Shaper) Event(w *bufio.Writer, data []byte) {
	var ev map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		return
	}
	if !s.translate(ev) {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	w.WriteString("data: ")
	w.Write(b)
	w.WriteString("\n\n")
}

// translate rewrites ev in place; false drops it. It covers the shapes the
// bench's producer sends, nothing more.
func (s *Shaper) translate(ev map[string]any) bool {
	typ, _ := ev["type"].(string)
	switch s.Mode {
	case Up:
		switch typ {
		case "THINKING_START":
			s.n++
			s.id = "reasoning-" + strconv.Itoa(s.n)
			ev["type"] = "REASONING_START"
			ev["messageId"] = s.id
			delete(ev, "title")
		case "THINKING_END":
			ev["type"] = "REASONING_END"
			ev["messageId"] = s.id
		case "THINKING_TEXT_MESSAGE_START":
			ev["type"] = "REASONING_MESSAGE_START"
			ev["messageId"] = s.id + "-m"
			ev["role"] = "reasoning"
		case "THINKING_TEXT_MESSAGE_CONTENT":
			ev["type"] = "REASONING_MESSAGE_CONTENT"
			ev["messageId"] = s.id + "-m"
		case "THINKING_TEXT_MESSAGE_END":
			ev["type"] = "REASONING_MESSAGE_END"
			ev["messageId"] = s.id + "-m"
		}
	case Down:
		if strings.HasPrefix(typ, "SUBAGENT_") {
			return false
		}
		delete(ev, "subagentRunId")
		delete(ev, "metadata")
		switch typ {
		case "RUN_STARTED":
			delete(ev, "protocolVersion")
		case "RUN_FINISHED":
			delete(ev, "outcome")
			delete(ev, "usage")
		case "TOOL_CALL_RESULT":
			if parts, ok := ev["content"].([]any); ok {
				var sb strings.Builder
				for _, p := range parts {
					if m, ok := p.(map[string]any); ok {
						if t, ok := m["text"].(string); ok {
							sb.WriteString(t)
						}
					}
				}
				ev["content"] = sb.String()
			}
		}
	}
	return true
}
