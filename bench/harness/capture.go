package harness

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agui-relay/agui-relay/internal/synth"
)

// A proxy's residence time is how long an event spends in it: from the
// moment the producer's segment carrying the event leaves for the proxy to
// the moment the proxy's segment carrying it leaves for the consumer, both
// read off one packet capture on loopback. The end-to-end latency the load
// generator measures also holds the load generator's own wait for a CPU,
// which on a shared machine is larger than any proxy's part and differs run
// to run (bench/README "Latency"); the residence time leaves it out, the
// same way for every proxy, and needs nothing of the proxy.

// Capture is tcpdump recording, on loopback, the TCP segments sent from a
// set of ports (the producer's and the proxy's), with nanosecond
// timestamps, into a pcap file.
type Capture struct {
	cmd    *exec.Cmd
	stderr string // the file tcpdump's stderr goes to
	done   chan error
}

// StartCapture starts tcpdump (at path) on the loopback interface and
// returns once it is capturing.
func StartCapture(path, file string, srcPorts ...int) (*Capture, error) {
	var filter []string
	for _, p := range srcPorts {
		filter = append(filter, "src port "+strconv.Itoa(p))
	}
	// Segments with a payload only: the IP total length minus both
	// headers' lengths is not zero.
	expr := "tcp and (" + strings.Join(filter, " or ") + ") and (((ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2)) != 0)"
	c := &Capture{stderr: file + ".stderr", done: make(chan error, 1)}
	errFile, err := os.Create(c.stderr)
	if err != nil {
		return nil, err
	}
	defer errFile.Close() // tcpdump has its own copy
	c.cmd = exec.Command(path, "-i", "lo", "-n", "-s", "0", "-B", "65536", "--time-stamp-precision=nano", "-w", file, expr)
	c.cmd.Stderr = errFile
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.done <- c.cmd.Wait() }()
	// tcpdump says "listening on lo" once its filter is in place.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.said(), "listening on") {
		select {
		case err := <-c.done:
			return nil, fmt.Errorf("tcpdump exited: %v: %s", err, c.said())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.cmd.Process.Kill() //nolint:errcheck // reported below
			<-c.done
			return nil, fmt.Errorf("tcpdump did not start: %s", c.said())
		}
	}
	return c, nil
}

// said is what tcpdump has written to its stderr so far.
func (c *Capture) said() string {
	b, _ := os.ReadFile(c.stderr)
	return strings.TrimSpace(string(b))
}

var droppedRe = regexp.MustCompile(`(\d+) packets? dropped by kernel`)

// Stop ends the capture and returns how many segments the kernel dropped
// (the capture's buffer overflowed: those segments are not in the file).
func (c *Capture) Stop() (dropped int64, err error) {
	c.cmd.Process.Signal(syscall.SIGINT) //nolint:errcheck // it may have exited; Wait says
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill() //nolint:errcheck // a capture that will not stop is reported below
		<-c.done
		return 0, errors.New("tcpdump did not stop")
	}
	said := c.said()
	removeQuietly(c.stderr)
	m := droppedRe.FindStringSubmatch(said)
	if m == nil {
		return 0, fmt.Errorf("tcpdump said nothing of dropped packets: %s", said)
	}
	dropped, _ = strconv.ParseInt(m[1], 10, 64)
	return dropped, nil
}

// Segment is one captured TCP segment's payload, borrowed from the reader
// until the next call.
type Segment struct {
	At      int64 // capture time, ns since the epoch
	SrcPort int
	Payload []byte
}

// PcapReader reads the TCP segments of a pcap file: IPv4 over Ethernet
// (what tcpdump writes for Linux's loopback), Linux cooked capture or raw
// IP, with microsecond or nanosecond timestamps.
type PcapReader struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	nano   bool
	link   uint32
	hdr    [16]byte
	buf    []byte
	Others int64 // records that are not IPv4 TCP, or cut short
}

// Link-layer types (www.tcpdump.org/linktypes.html).
const (
	linkEthernet = 1
	linkRaw      = 101
	linkLinuxSLL = 113
)

// NewPcapReader reads the file header.
func NewPcapReader(r io.Reader) (*PcapReader, error) {
	p := &PcapReader{r: bufio.NewReaderSize(r, 1<<16)}
	var h [24]byte
	if _, err := io.ReadFull(p.r, h[:]); err != nil {
		return nil, fmt.Errorf("pcap header: %w", err)
	}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == 0xa1b2c3d4:
		p.order = binary.LittleEndian
	case binary.LittleEndian.Uint32(h[:]) == 0xa1b23c4d:
		p.order, p.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:]) == 0xa1b2c3d4:
		p.order = binary.BigEndian
	case binary.BigEndian.Uint32(h[:]) == 0xa1b23c4d:
		p.order, p.nano = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("not a pcap file (magic %x)", h[:4])
	}
	p.link = p.order.Uint32(h[20:]) & 0x0fffffff
	switch p.link {
	case linkEthernet, linkRaw, linkLinuxSLL:
	default:
		return nil, fmt.Errorf("pcap link type %d not read here", p.link)
	}
	return p, nil
}

// Next returns the next TCP segment, or io.EOF.
func (p *PcapReader) Next(s *Segment) error {
	for {
		if _, err := io.ReadFull(p.r, p.hdr[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return errors.New("pcap: record header cut short")
			}
			return err
		}
		sec, frac := int64(p.order.Uint32(p.hdr[0:])), int64(p.order.Uint32(p.hdr[4:]))
		n := p.order.Uint32(p.hdr[8:])
		if n > 1<<20 {
			return fmt.Errorf("pcap: record of %d bytes", n)
		}
		if cap(p.buf) < int(n) {
			p.buf = make([]byte, n)
		}
		p.buf = p.buf[:n]
		if _, err := io.ReadFull(p.r, p.buf); err != nil {
			return fmt.Errorf("pcap: record cut short: %w", err)
		}
		if !p.nano {
			frac *= 1000
		}
		s.At = sec*1e9 + frac
		if p.tcp(s) {
			return nil
		}
		p.Others++
	}
}

// tcp finds the TCP header and payload in p.buf.
func (p *PcapReader) tcp(s *Segment) bool {
	b := p.buf
	switch p.link {
	case linkEthernet:
		if len(b) < 14 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
			return false
		}
		b = b[14:]
	case linkLinuxSLL:
		if len(b) < 16 || binary.BigEndian.Uint16(b[14:]) != 0x0800 {
			return false
		}
		b = b[16:]
	}
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 6 {
		return false
	}
	ihl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < 20 || total < ihl || total > len(b) {
		return false
	}
	b = b[ihl:total]
	if len(b) < 20 {
		return false
	}
	off := int(b[12]>>4) * 4
	if off < 20 || off > len(b) {
		return false
	}
	s.SrcPort = int(binary.BigEndian.Uint16(b[0:]))
	s.Payload = b[off:]
	return true
}

// Residence is what a capture measured of a proxy.
type Residence struct {
	// Segments read from the capture, from the producer (In) and from the
	// proxy (Out).
	In  int64 `json:"segments_in"`
	Out int64 `json:"segments_out"`
	// Matched are the stamped events seen on both sides; UnmatchedIn only
	// going in (still in the proxy when the capture stopped, or their
	// stamp split between two segments on the way out) and UnmatchedOut
	// only coming out (their way in was before the capture started, or
	// split).
	Matched      int64 `json:"matched"`
	UnmatchedIn  int64 `json:"unmatched_in"`
	UnmatchedOut int64 `json:"unmatched_out"`
	// Dropped are the segments the kernel did not hand to the capture.
	Dropped int64 `json:"dropped"`
	// The residence times in microseconds.
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
	Mean float64 `json:"mean_us"`
}

// MeasureResidence reads a capture of a proxy's traffic: segments from
// inPort (the producer) carry events into the proxy and segments from
// outPort (the proxy's listening port) carry them on to the consumer. An
// event is known on both sides by its stamp (its sequence number and send
// time), and its residence time is the capture time of the segment that
// took it out less that of the segment that brought it in.
func MeasureResidence(r io.Reader, inPort, outPort int) (Residence, error) {
	var res Residence
	pr, err := NewPcapReader(r)
	if err != nil {
		return res, err
	}
	type key struct{ seq, ns int64 }
	arrived := make(map[key]int64)
	h := NewHist()
	var s Segment
	for {
		err := pr.Next(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		switch s.SrcPort {
		case inPort:
			res.In++
			eachStamp(s.Payload, func(seq, ns int64) { arrived[key{seq, ns}] = s.At })
		case outPort:
			res.Out++
			eachStamp(s.Payload, func(seq, ns int64) {
				k := key{seq, ns}
				at, ok := arrived[k]
				if !ok {
					res.UnmatchedOut++
					return
				}
				delete(arrived, k)
				res.Matched++
				h.Record(s.At - at)
			})
		}
	}
	res.UnmatchedIn = int64(len(arrived))
	res.P50, res.P99, res.P999, res.Mean, res.Max = h.Micros()
	return res, nil
}

// eachStamp calls f with every whole stamp "#<seq>:<ns>#" in b.
func eachStamp(b []byte, f func(seq, ns int64)) {
	for {
		i := bytes.IndexByte(b, '#')
		if i < 0 {
			return
		}
		b = b[i:]
		if seq, ns, ok := synth.ParseStamp(b); ok {
			f(seq, ns)
			b = b[bytes.IndexByte(b[1:], '#')+2:] // past its closing '#'
			continue
		}
		b = b[1:]
	}
}

// findTcpdump returns tcpdump's path, installing Debian's package first
// when setup allows it.
func findTcpdump(cfg Config) (string, error) {
	return findPackaged(cfg, "tcpdump", "/usr/bin/tcpdump", "/usr/sbin/tcpdump")
}

// removeQuietly removes a capture file that has been read.
func removeQuietly(file string) {
	if os.Getenv("AGUIBENCH_KEEP") == "" {
		os.Remove(file)
	}
}

// CaptureResult is a paced window under a packet capture: the time each
// event spent in the proxy, and the window's own end-to-end figures.
type CaptureResult struct {
	Streams int `json:"streams"`
	Residence
	Phase PhaseResult `json:"phase"`
	Error string      `json:"error,omitempty"`
}

// captureCase runs the paced load of n streams through proc once more,
// under a capture of the producer's and the proxy's segments.
func captureCase(cfg Config, sp caseSpec, proc *Proc, prod *synth.Producer, work string, n int) CaptureResult {
	res := CaptureResult{Streams: n}
	inPort, err1 := portOf(prod.Addr())
	outPort, err2 := portOf(proc.Addr)
	if err := errors.Join(err1, err2); err != nil {
		res.Error = err.Error()
		return res
	}
	file := filepath.Join(work, "capture.pcap")
	defer removeQuietly(file)
	var capErr error
	ev := pacedEvents(cfg)
	load := Load{Streams: n, Params: synth.RunParams{Dialect: sp.Dialect, Events: ev, Rate: cfg.PacedRate, Mix: sp.Mix},
		Warmup: cfg.PacedWarmup, Measure: cfg.PacedMeasur, Exact: sp.Exact,
		During: func() func() {
			c, err := StartCapture(cfg.tcpdump, file, inPort, outPort)
			if err != nil {
				capErr = err
				return nil
			}
			return func() { res.Dropped, capErr = c.Stop() }
		}}
	res.Phase = RunLoad(proc.Addr, proc, prod.Plan(sp.Dialect, ev, sp.Mix), load)
	if capErr != nil {
		res.Error = capErr.Error()
		return res
	}
	f, err := os.Open(file)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer f.Close()
	dropped := res.Dropped
	res.Residence, err = MeasureResidence(f, inPort, outPort)
	res.Dropped = dropped
	if err != nil {
		res.Error = err.Error()
	}
	cfg.logf("   in the proxy %5d×%g ev/s: p50 %7.0f µs p99 %7.0f µs p999 %7.0f µs  (%d events matched, %d/%d unmatched, %d dropped; end to end p99 %.0f µs) %s",
		res.Streams, cfg.PacedRate, res.P50, res.P99, res.P999, res.Matched, res.UnmatchedIn, res.UnmatchedOut, res.Dropped, res.Phase.P99, res.Error)
	return res
}

func portOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}
