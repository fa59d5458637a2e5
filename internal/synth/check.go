package synth

import (
	"bytes"
	"fmt"
)

// ParseStamp finds the stamp "#<seq>:<ns>#" in an event and returns it.
func ParseStamp(ev []byte) (seq, ns int64, ok bool) {
	i := bytes.IndexByte(ev, '#')
	if i < 0 {
		return 0, 0, false
	}
	j := i + 1
	seq, j, ok = parseDigits(ev, j)
	if !ok || j >= len(ev) || ev[j] != ':' {
		return 0, 0, false
	}
	ns, j, ok = parseDigits(ev, j+1)
	if !ok || j >= len(ev) || ev[j] != '#' {
		return 0, 0, false
	}
	return seq, ns, true
}

func parseDigits(b []byte, i int) (int64, int, bool) {
	start := i
	var v int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	return v, i, i > start && i-start <= 19
}

// RunCheck judges the completeness of one received run: every stamped event
// arrived once and in order, the run started and ended, and (when the
// stream was not translated) no event was added or lost.
type RunCheck struct {
	// WantStamped is how many stamped events the producer sent.
	WantStamped int64
	// WantEvents is the exact number of events expected, or -1 when a
	// translation may change the count.
	WantEvents int64

	next       int64
	Events     int64
	Missing    int64
	Late       int64 // duplicated or out of order
	Started    bool
	Terminated bool
	Malformed  int64
	AfterEnd   int64
}

// NewRunCheck expects plan's stamped events; exact asks for the exact event
// count too.
func NewRunCheck(plan Plan, exact bool) *RunCheck {
	c := &RunCheck{WantStamped: int64(plan.Stamped), WantEvents: -1}
	if exact {
		c.WantEvents = int64(len(plan.Kinds))
	}
	return c
}

// Reset prepares c for the next run of the same plan.
func (c *RunCheck) Reset() {
	*c = RunCheck{WantStamped: c.WantStamped, WantEvents: c.WantEvents}
}

// Event judges one event (the frame's data) and returns its stamp, if any.
func (c *RunCheck) Event(ev []byte) (ns int64, stamped bool) {
	c.Events++
	if c.Terminated {
		c.AfterEnd++
	}
	seq, ns, ok := ParseStamp(ev)
	if !ok {
		switch {
		case bytes.Contains(ev, []byte(`"RUN_STARTED"`)):
			if c.Started || c.Events != 1 {
				c.Malformed++
			}
			c.Started = true
		case bytes.Contains(ev, []byte(`"RUN_FINISHED"`)), bytes.Contains(ev, []byte(`"RUN_ERROR"`)):
			c.Terminated = true
		}
		return 0, false
	}
	switch {
	case seq == c.next:
		c.next++
	case seq > c.next:
		c.Missing += seq - c.next
		c.next = seq + 1
	default:
		c.Late++
	}
	return ns, true
}

// Err is nil when the run was complete.
func (c *RunCheck) Err() error {
	if c.next < c.WantStamped {
		c.Missing += c.WantStamped - c.next
		c.next = c.WantStamped
	}
	switch {
	case !c.Started:
		return fmt.Errorf("no RUN_STARTED first")
	case !c.Terminated:
		return fmt.Errorf("no terminal event after %d events (%d stamped of %d)", c.Events, c.next, c.WantStamped)
	case c.Late > 0:
		return fmt.Errorf("%d stamped events duplicated or out of order (%d skipped over)", c.Late, c.Missing)
	case c.Missing > 0:
		return fmt.Errorf("%d stamped events missing", c.Missing)
	case c.next > c.WantStamped:
		return fmt.Errorf("%d stamped events beyond the %d sent", c.next-c.WantStamped, c.WantStamped)
	case c.Malformed > 0:
		return fmt.Errorf("%d misplaced RUN_STARTED", c.Malformed)
	case c.AfterEnd > 0:
		return fmt.Errorf("%d events after the terminal event", c.AfterEnd)
	case c.WantEvents >= 0 && c.Events != c.WantEvents:
		return fmt.Errorf("%d events, want %d", c.Events, c.WantEvents)
	}
	return nil
}
