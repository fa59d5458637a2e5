package harness

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/synth"
)

// pcapFile builds a capture as tcpdump writes one on Linux's loopback.
type pcapFile struct {
	b     bytes.Buffer
	order binary.ByteOrder
	nano  bool
	link  uint32
}

func newPcap(order binary.ByteOrder, nano bool, link uint32) *pcapFile {
	p := &pcapFile{order: order, nano: nano, link: link}
	h := make([]byte, 24)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	order.PutUint32(h, magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], 262144)
	order.PutUint32(h[20:], link)
	p.b.Write(h)
	return p
}

// segment adds a TCP segment from srcPort captured at ns since the epoch.
func (p *pcapFile) segment(ns int64, srcPort int, payload string) {
	tcp := make([]byte, 32) // with 12 bytes of options, as Linux sends
	binary.BigEndian.PutUint16(tcp, uint16(srcPort))
	binary.BigEndian.PutUint16(tcp[2:], 40000)
	tcp[12] = 8 << 4
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(tcp)+len(payload)))
	ip[9] = 6
	pkt := append(append(ip, tcp...), payload...)
	switch p.link {
	case linkEthernet:
		eth := make([]byte, 14)
		binary.BigEndian.PutUint16(eth[12:], 0x0800)
		pkt = append(eth, pkt...)
	case linkLinuxSLL:
		sll := make([]byte, 16)
		binary.BigEndian.PutUint16(sll[14:], 0x0800)
		pkt = append(sll, pkt...)
	}
	p.record(ns, pkt)
}

func (p *pcapFile) record(ns int64, pkt []byte) {
	h := make([]byte, 16)
	frac := ns % 1e9
	if !p.nano {
		frac /= 1000
	}
	p.order.PutUint32(h, uint32(ns/1e9))
	p.order.PutUint32(h[4:], uint32(frac))
	p.order.PutUint32(h[8:], uint32(len(pkt)))
	p.order.PutUint32(h[12:], uint32(len(pkt)))
	p.b.Write(h)
	p.b.Write(pkt)
}

func event(seq, ns int64) string {
	return `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"tok ` + string(synth.AppendStamp(nil, seq, ns)) + `"}` + "\n\n"
}

const (
	producerPort = 5001
	proxyPort    = 8080
	t0           = int64(1_700_000_000_000_000_000)
)

func TestMeasureResidenceMatchesEventsByStamp(t *testing.T) {
	p := newPcap(binary.LittleEndian, true, linkEthernet)
	// Three events in; the proxy sends the first alone after 40 µs and the
	// other two together after 100 µs and 70 µs.
	p.segment(t0, producerPort, event(1, 11))
	p.segment(t0+10_000, producerPort, event(2, 22))
	p.segment(t0+40_000, proxyPort, "3f\r\n"+event(1, 11)+"\r\n")
	p.segment(t0+40_000, producerPort, event(3, 33))
	p.segment(t0+110_000, proxyPort, event(2, 22)+event(3, 33))
	// Not TCP: counted aside, not matched.
	p.record(t0+120_000, make([]byte, 60))
	// Out before the capture saw it come in, and in with no way out yet.
	p.segment(t0+130_000, proxyPort, event(9, 99))
	p.segment(t0+140_000, producerPort, event(4, 44))

	res, err := MeasureResidence(&p.b, producerPort, proxyPort)
	if err != nil {
		t.Fatal(err)
	}
	if res.In != 4 || res.Out != 3 {
		t.Errorf("segments in/out = %d/%d, want 4/3", res.In, res.Out)
	}
	if res.Matched != 3 || res.UnmatchedIn != 1 || res.UnmatchedOut != 1 {
		t.Errorf("matched %d, unmatched in %d out %d; want 3, 1, 1", res.Matched, res.UnmatchedIn, res.UnmatchedOut)
	}
	// 40, 100 and 70 µs: the histogram's buckets are under 1% wide.
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	if !near(res.P50, 70) || !near(res.Max, 100) || !near(res.Mean, 70) {
		t.Errorf("p50 %.1f max %.1f mean %.1f µs, want 70, 100, 70", res.P50, res.Max, res.Mean)
	}
}

func TestPcapReaderFormats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order binary.ByteOrder
		nano  bool
		link  uint32
	}{
		{"ethernet ns little-endian", binary.LittleEndian, true, linkEthernet},
		{"ethernet µs big-endian", binary.BigEndian, false, linkEthernet},
		{"cooked", binary.LittleEndian, true, linkLinuxSLL},
		{"raw IP", binary.BigEndian, true, linkRaw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPcap(tc.order, tc.nano, tc.link)
			p.segment(t0+123_456_000, producerPort, "hello")
			r, err := NewPcapReader(&p.b)
			if err != nil {
				t.Fatal(err)
			}
			var s Segment
			if err := r.Next(&s); err != nil {
				t.Fatal(err)
			}
			if s.At != t0+123_456_000 || s.SrcPort != producerPort || string(s.Payload) != "hello" {
				t.Errorf("got %d %d %q", s.At, s.SrcPort, s.Payload)
			}
			if err := r.Next(&s); err != io.EOF {
				t.Errorf("after the last record: %v, want EOF", err)
			}
		})
	}
}

func TestPcapReaderRefusesWhatItCannotRead(t *testing.T) {
	if _, err := NewPcapReader(strings.NewReader("not a capture at all....")); err == nil || !strings.Contains(err.Error(), "not a pcap") {
		t.Errorf("foreign file: %v", err)
	}
	p := newPcap(binary.LittleEndian, true, 228) // IPv4 link type: not read here
	if _, err := NewPcapReader(&p.b); err == nil || !strings.Contains(err.Error(), "link type 228") {
		t.Errorf("unknown link type: %v", err)
	}
	p = newPcap(binary.LittleEndian, true, linkEthernet)
	p.segment(t0, producerPort, event(1, 11))
	cut := p.b.Bytes()[:p.b.Len()-5]
	if _, err := MeasureResidence(bytes.NewReader(cut), producerPort, proxyPort); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a record cut short: %v", err)
	}
}

func TestEachStampFindsEveryWholeStamp(t *testing.T) {
	var got [][2]int64
	in := "#x# #12:#34# " + string(synth.AppendStamp(nil, 1, 100)) + "##" + string(synth.AppendStamp(nil, 2, 200)) + " #3:30"
	eachStamp([]byte(in), func(seq, ns int64) { got = append(got, [2]int64{seq, ns}) })
	if len(got) != 2 || got[0] != [2]int64{1, 100} || got[1] != [2]int64{2, 200} {
		t.Errorf("stamps %v, want [1 100] [2 200]", got)
	}
}

// A program on the PATH is found; a missing one, without --setup, is an
// error that names the package that would install it.
func TestFindPackaged(t *testing.T) {
	if p, err := findPackaged(Config{}, "dash", "/bin/sh"); err != nil || p == "" {
		t.Errorf("sh: %q, %v", p, err)
	}
	_, err := findPackaged(Config{}, "no-such-package", "/usr/sbin/no-such-program-here")
	if err == nil || err.Error() != "no-such-program-here not installed (run with --setup to install Debian's no-such-package)" {
		t.Errorf("missing program: %v", err)
	}
}

// fakeTcpdump writes a shell script that behaves as tcpdump does on its
// stderr: script runs after the arguments are ignored.
func fakeTcpdump(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tcpdump")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartCapture returns once tcpdump listens, and Stop reads what the
// kernel dropped from what tcpdump says as it ends.
func TestCaptureStartsAndStopsAsTcpdumpSays(t *testing.T) {
	listening := filepath.Join(t.TempDir(), "listening")
	path := fakeTcpdump(t, `trap 'echo "9 packets captured" >&2; echo "2 packets dropped by kernel" >&2; exit 0' INT
sleep 0.05
touch `+listening+`
echo "listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes" >&2
while :; do sleep 0.01; done
`)
	c, err := StartCapture(path, filepath.Join(t.TempDir(), "c.pcap"), 5001, 8080)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(listening); err != nil {
		t.Errorf("StartCapture returned before tcpdump listened: %v", err)
	}
	if dropped, err := c.Stop(); err != nil || dropped != 2 {
		t.Errorf("Stop: %d dropped, %v; want 2", dropped, err)
	}
}

// A tcpdump that cannot capture is reported with what it said.
func TestCaptureThatCannotStart(t *testing.T) {
	path := fakeTcpdump(t, `echo "tcpdump: lo: You don't have permission to capture on that device" >&2
exit 1
`)
	_, err := StartCapture(path, filepath.Join(t.TempDir(), "c.pcap"), 5001, 8080)
	if err == nil || !strings.Contains(err.Error(), "tcpdump exited") || !strings.Contains(err.Error(), "permission") {
		t.Errorf("got %v", err)
	}
	if _, err := StartCapture(filepath.Join(t.TempDir(), "absent"), filepath.Join(t.TempDir(), "c.pcap"), 5001); err == nil {
		t.Error("a missing tcpdump started")
	}
}
