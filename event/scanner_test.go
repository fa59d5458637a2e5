package event

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
)

type scanned struct {
	data      string
	hasData   bool
	fields    string
	canonical bool
}

func scanAll(t *testing.T, r io.Reader, max int) ([]scanned, []byte, error) {
	t.Helper()
	sc := NewScanner(r, max)
	var out []scanned
	var written []byte
	for {
		f, err := sc.Next()
		if err != nil {
			return out, written, err
		}
		out = append(out, scanned{string(f.Data), f.HasData(), string(f.Fields), f.Canonical})
		if f.Canonical {
			written = append(written, f.Raw...)
		} else if f.HasData() {
			written = AppendFrame(written, f.Fields, f.Data)
		} else {
			written = append(append(written, f.Fields...), '\n')
		}
	}
}

// rawFrames scans sc to its clean end and returns the raw frames end to
// end; after, when not nil, runs after each frame.
func rawFrames(t *testing.T, sc *Scanner, after func()) string {
	t.Helper()
	var got strings.Builder
	for {
		f, err := sc.Next()
		if err == io.EOF {
			return got.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		got.Write(f.Raw)
		if after != nil {
			after()
		}
	}
}

func TestScannerFraming(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []scanned
		written string
	}{
		{"canonical", "data: {\"a\":1}\n\ndata: {}\n\n",
			[]scanned{{`{"a":1}`, true, "", true}, {`{}`, true, "", true}},
			"data: {\"a\":1}\n\ndata: {}\n\n"},
		{"crlf", "data: {\"a\":1}\r\n\r\ndata: {}\r\n\r\n",
			[]scanned{{`{"a":1}`, true, "", false}, {`{}`, true, "", false}},
			"data: {\"a\":1}\n\ndata: {}\n\n"},
		{"cr only", "data: 1\r\rdata: 2\r\r",
			[]scanned{{"1", true, "", false}, {"2", true, "", false}},
			"data: 1\n\ndata: 2\n\n"},
		{"bom", "\xEF\xBB\xBFdata: 1\n\n",
			[]scanned{{"1", true, "", true}},
			"data: 1\n\n"},
		{"no space", "data:1\n\n",
			[]scanned{{"1", true, "", false}},
			"data: 1\n\n"},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n",
			[]scanned{{"{\"a\":\n1}", true, "", true}},
			"data: {\"a\":\ndata: 1}\n\n"},
		{"comment keep-alive", ": ping\n\ndata: 1\n\n",
			[]scanned{{"", false, ": ping\n", true}, {"1", true, "", true}},
			": ping\n\ndata: 1\n\n"},
		{"fields kept", "event: message\nid: 7\nretry: 10\ndata: 1\n\n",
			[]scanned{{"1", true, "event: message\nid: 7\nretry: 10\n", true}},
			"event: message\nid: 7\nretry: 10\ndata: 1\n\n"},
		{"field after data moves first", "data: 1\nid: 7\n\n",
			[]scanned{{"1", true, "id: 7\n", false}},
			"id: 7\ndata: 1\n\n"},
		{"comment between data lines moves first", "data: 1\n: note\ndata: 2\n\n",
			[]scanned{{"1\n2", true, ": note\n", false}},
			": note\ndata: 1\ndata: 2\n\n"},
		{"extra blank lines", "\n\n\ndata: 1\n\n\n\ndata: 2\n\n",
			[]scanned{{"1", true, "", true}, {"2", true, "", true}},
			"data: 1\n\ndata: 2\n\n"},
		{"final frame without blank line", "data: 1\n\ndata: 2\n",
			[]scanned{{"1", true, "", true}, {"2", true, "", false}},
			"data: 1\n\ndata: 2\n\n"},
		{"final frame without newline", "data: 2",
			[]scanned{{"2", true, "", false}},
			"data: 2\n\n"},
		{"empty data line", "data:\n\n",
			[]scanned{{"", true, "", false}},
			"data: \n\n"},
		{"bare data field", "data\n\n",
			[]scanned{{"", true, "", false}},
			"data: \n\n"},
		{"leading space is another field", " data: 1\n\n",
			[]scanned{{"", false, " data: 1\n", true}},
			" data: 1\n\n"},
	}
	for _, tc := range tests {
		for _, reader := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytewise", iotest.OneByteReader}} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				got, written, err := scanAll(t, reader.wrap(strings.NewReader(tc.in)), 0)
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("frames = %+v, want %+v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("frame %d = %+v, want %+v", i, got[i], tc.want[i])
					}
				}
				if string(written) != tc.written {
					t.Errorf("written = %q, want %q", written, tc.written)
				}
			})
		}
	}
}

func TestScannerRefusesOversizedFrame(t *testing.T) {
	big := "data: \"" + strings.Repeat("x", 100) + "\"\n\n"
	for _, in := range []string{big, strings.ReplaceAll(big, "\n", "\r\n"), "data: 1\n\n" + big} {
		_, _, err := scanAll(t, strings.NewReader(in), 64)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("err = %v, want ErrFrameTooLarge for %q", err, in[:12])
		}
	}
	// A frame exactly at the limit passes.
	exact := "data: \"" + strings.Repeat("x", 54) + "\"\n\n"
	if got, _, err := scanAll(t, strings.NewReader(exact), len(exact)); err != io.EOF || len(got) != 1 {
		t.Errorf("frame at the limit: got %d frames, err %v", len(got), err)
	}
	// A frame ending in CRLF is judged the same read whole or byte by byte:
	// a CR ends it at once, so the LF after it, which may come in a later
	// read, does not count (the fuzzer found the two verdicts differing).
	crlf := "data: \"" + strings.Repeat("x", 54) + "\"\r\n\r\n"
	for _, n := range []int{len(crlf), 1} {
		for _, limit := range []int{len(crlf) - 1, len(crlf) - 2} {
			_, err := scanPieces([]byte(crlf), n, limit)
			if over := limit < len(crlf)-1; over != errors.Is(err, ErrFrameTooLarge) {
				t.Errorf("CRLF frame of %d bytes, limit %d, read %d at a time: err %v", len(crlf), limit, n, err)
			}
		}
	}
}

func TestScannerDropsFrameCutByError(t *testing.T) {
	broken := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: {\"half"), iotest.ErrReader(broken))
	got, _, err := scanAll(t, r, 0)
	if !errors.Is(err, broken) || len(got) != 1 {
		t.Fatalf("got %+v, %v; want one frame then the reset", got, err)
	}
}

// splitReader returns its input in two reads, split at n.
func splitReader(s string, n int) io.Reader {
	return io.MultiReader(strings.NewReader(s[:n]), strings.NewReader(s[n:]))
}

func TestScannerFramingAtEverySplit(t *testing.T) {
	inputs := []string{
		"data: {\"a\":1}\n\ndata: {}\n\n",
		"data: 1\r\n\r\ndata: 2\r\n\r\n",
		"data: 1\r\rdata: 2\r\r",
		"\xEF\xBB\xBFdata: 1\n\n: ping\n\n",
		"event: x\ndata: a\ndata: b\n\n\r\n\r\ndata: c\n\n",
		"data: 1\n\ndata: 2",
	}
	for _, in := range inputs {
		_, want, err := scanAll(t, strings.NewReader(in), 0)
		if err != io.EOF {
			t.Fatalf("%q: %v", in, err)
		}
		for n := 0; n <= len(in); n++ {
			_, got, err := scanAll(t, splitReader(in, n), 0)
			if err != io.EOF || string(got) != string(want) {
				t.Errorf("%q split at %d: wrote %q (%v), want %q", in, n, got, err, want)
			}
		}
	}
}

func TestScannerCanonicalAfterCRLFBlankLines(t *testing.T) {
	got, _, err := scanAll(t, strings.NewReader("\r\n\r\ndata: 1\n\n"), 0)
	if err != io.EOF || len(got) != 1 || !got[0].canonical {
		t.Fatalf("got %+v, %v; want one canonical frame", got, err)
	}
}

// A frame whose blank line is a CR at the end of what has arrived is
// complete: the scanner must not wait for the next byte to see whether it
// is CRLF, since the producer may send nothing until its next event.
func TestScannerCRFrameDoesNotWaitForNextByte(t *testing.T) {
	for _, first := range []string{"data: 1\r\r", "data: 1\r\n\r"} {
		pr, pw := io.Pipe()
		sc := NewScanner(pr, 0)
		go pw.Write([]byte(first))
		f, err := sc.Next() // blocks forever if the scanner waits for more
		if err != nil || string(f.Data) != "1" {
			t.Fatalf("%q: got %v, %v", first, f, err)
		}
		go func() {
			pw.Write([]byte("\ndata: 2\n\n"))
			pw.Close()
		}()
		f, err = sc.Next()
		if err != nil || string(f.Data) != "2" || f.Fields != nil && len(f.Fields) > 0 {
			t.Fatalf("%q: second frame %v %q, %v", first, f, f.Data, err)
		}
		if _, err := sc.Next(); err != io.EOF {
			t.Fatalf("%q: end: %v", first, err)
		}
	}
}

// A large frame arriving in small reads is searched for its end once, not
// from its start after every read: a blank line planted among the bytes
// already searched goes unseen, and the frame is whole only when its own
// end arrives.
func TestScannerSearchesLargeFrameOnce(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n"} {
		line := "data: " + strings.Repeat("x", 100) + nl
		src := &chunkReader{s: strings.Repeat(line, 2000) + nl, n: 64}
		sc := NewScanner(nil, 0)
		var f Frame
		planted := false
		for {
			ok, err := sc.Scan(&f)
			if err != nil {
				t.Fatalf("%q: %v", nl, err)
			}
			if ok {
				break
			}
			if !planted && sc.scanned > 1000 {
				planted = true
				copy(sc.buf[sc.start+500:], nl+nl)
			}
			if err := sc.Fill(src); err != nil {
				t.Fatalf("%q: %v", nl, err)
			}
		}
		if !planted || src.s != "" {
			t.Fatalf("%q: a frame with %d bytes of the source left (planted %v): the search went back over what it had searched", nl, len(src.s), planted)
		}
	}
}

// chunkReader returns s in reads of at most n bytes.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}

// refFrames frames a whole input the plain WHATWG way, for the differential
// fuzz test: split lines on CRLF, LF or CR, dispatch at blank lines, keep
// non-data lines as fields, and write each frame canonically.
func refFrames(in string) string {
	in = strings.TrimPrefix(in, "\xEF\xBB\xBF")
	in = strings.ReplaceAll(in, "\r\n", "\n")
	in = strings.ReplaceAll(in, "\r", "\n")
	lines := strings.Split(in, "\n")
	var out, fields strings.Builder
	var data []string
	hasData := false
	flush := func() {
		if hasData {
			out.WriteString(string(AppendFrame([]byte(fields.String()), nil, []byte(strings.Join(data, "\n")))))
		} else if fields.Len() > 0 {
			out.WriteString(fields.String() + "\n")
		}
		fields.Reset()
		data, hasData = nil, false
	}
	for _, l := range lines {
		switch {
		case l == "":
			flush()
		case l == "data":
			data, hasData = append(data, ""), true
		case strings.HasPrefix(l, "data: "):
			data, hasData = append(data, l[6:]), true
		case strings.HasPrefix(l, "data:"):
			data, hasData = append(data, l[5:]), true
		default:
			fields.WriteString(l + "\n")
		}
	}
	flush() // a frame open at a clean end is delivered
	return out.String()
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\n", "data: 1\r\n\r\ndata: 2\r\r", ": ping\n\nid: 1\ndata: x\ndata: y\n\n",
		"\xEF\xBB\xBFdata:1\n\ndata\n\n", "data: 1\nid: 2\n\n\n\n", "data: 2", "\r\n\r\ndata: 1\r",
	} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, in string, split int) {
		want := refFrames(in)
		if split < 0 {
			split = -split
		}
		split %= len(in) + 1
		for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), splitReader(in, split)} {
			_, got, err := scanAll(t, r, 0)
			if err != io.EOF || string(got) != want {
				t.Fatalf("scanner wrote %q (%v), reference %q", got, err, want)
			}
		}
	})
}

// The producer's byte-order mark is the scanner's to drop, but a first
// frame that begins with U+FEFF of its own (a second mark) must reach the
// consumer as it was: a field named "\uFEFFdata", not an event. The
// consumer strips a leading mark, so the Stream writes one of its own
// before such a frame, and only then (the fuzzer found the consumer
// reading an event the producer never sent).
func TestStreamKeepsAFirstFrameThatStartsWithAMark(t *testing.T) {
	const frame = "\xEF\xBB\xBFdata: {\"type\":\"CUSTOM\",\"name\":\"n\",\"value\":1}\n\n"
	for _, tc := range []struct {
		in, want string
	}{
		{"\xEF\xBB\xBF" + frame, "\xEF\xBB\xBF" + frame}, // a frame that is not an event, relayed as it means
		{frame, frame[3:]}, // the producer's mark dropped, the event as it came
		{"data: 1\n\n" + frame, "data: 1\n\n" + frame}, // U+FEFF past the start is no mark: nothing added
	} {
		frames, err := scanPieces([]byte(tc.in), len(tc.in)+1, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		st := (&Translator{}).NewStream(negotiate.Current, negotiate.Version{}, &out)
		for _, f := range frames {
			if err := st.Frame(&f); err != nil {
				t.Fatal(err)
			}
		}
		if out.String() != tc.want {
			t.Errorf("%q relayed as %q, want %q", tc.in, out.String(), tc.want)
		}
		// What the consumer reads is what the producer sent.
		again, err := scanPieces([]byte(out.String()), out.Len()+1, 0)
		if err != nil || len(again) != len(frames) {
			t.Fatalf("%q read back as %d frames of %d, %v", out.String(), len(again), len(frames), err)
		}
		for i := range again {
			if string(again[i].Fields) != string(frames[i].Fields) || string(again[i].Data) != string(frames[i].Data) || again[i].HasData() != frames[i].HasData() {
				t.Errorf("frame %d read back as %+v, sent as %+v", i, again[i], frames[i])
			}
		}
	}
}

// writesReader returns its chunks one per Read, as a producer's socket does
// with its writes.
type writesReader struct{ chunks []string }

func (r *writesReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if n == len(r.chunks[0]) {
		r.chunks = r.chunks[1:]
	} else {
		r.chunks[0] = r.chunks[0][n:]
	}
	return n, nil
}

// The scanner starts small, grows while reads fill it (a burst) and for a
// large frame, and shrinks back once reads stay small; frames are the same
// whatever its size.
func TestScannerBufferGrowsAndShrinks(t *testing.T) {
	burst := strings.Repeat(testkit.ContentEvent, 2000) // ~230 KiB in one go
	large := "data: {\"type\":\"CUSTOM\",\"value\":\"" + strings.Repeat("v", 100<<10) + "\"}\n\n"
	var chunks []string
	chunks = append(chunks, burst, large)
	for range smallReadsToShrink + 2 {
		chunks = append(chunks, testkit.ContentEvent)
	}
	sc := NewScanner(&writesReader{chunks: slices.Clone(chunks)}, 0)
	if len(sc.buf) != baseSize {
		t.Fatalf("starts at %d bytes", len(sc.buf))
	}
	var sizes []int
	got := rawFrames(t, sc, func() { sizes = append(sizes, len(sc.buf)) })
	if got != strings.Join(chunks, "") {
		t.Fatal("frames differ from the input")
	}
	if sizes[1500] != burstSize {
		t.Errorf("during the burst the buffer is %d bytes, want %d", sizes[1500], burstSize)
	}
	if sizes[2000] < len(large) {
		t.Errorf("the large frame was returned from a %d-byte buffer", sizes[2000])
	}
	if last := sizes[len(sizes)-1]; last != baseSize {
		t.Errorf("after small reads the buffer is %d bytes, want %d", last, baseSize)
	}
}

// Push gives the same events however the stream is cut, in two anywhere
// or byte by byte, whether its lines end in LF, CRLF or CR.
func TestPushAcrossPieces(t *testing.T) {
	lf := "data: {\"a\":1}\n\n: keep-alive\n\nevent: x\ndata: {\"b\":\ndata: 2}\n\ndata:{\"c\":3}\n\n"
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		pushEveryWay(t, strings.ReplaceAll(lf, "\n", eol))
	}
}

func pushEveryWay(t *testing.T, stream string) {
	t.Helper()
	want := []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`}
	// Every way of cutting the stream in two, and byte by byte.
	cuts := [][]int{}
	for i := 0; i <= len(stream); i++ {
		cuts = append(cuts, []int{i})
	}
	var every []int
	for i := 1; i < len(stream); i++ {
		every = append(every, i)
	}
	cuts = append(cuts, every)
	for _, cut := range cuts {
		var got []string
		empty := 0
		sc := NewScanner(nil, 0)
		frame := func(f Frame) {
			if f.HasData() {
				got = append(got, string(f.Data))
			} else {
				empty++
			}
		}
		prev := 0
		for _, c := range append(cut, len(stream)) {
			if err := sc.Push([]byte(stream[prev:c]), frame); err != nil {
				t.Fatalf("%q cut %v: %v", stream, cut, err)
			}
			prev = c
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || empty != 1 || sc.Buffered() != 0 {
			t.Fatalf("%q cut %v: got %q (empty %d, pending %d bytes), want %q", stream, cut, got, empty, sc.Buffered(), want)
		}
	}
}

// End delivers the frame a pushed stream left open at its clean end, as
// Scan does at a source's io.EOF.
func TestEndDeliversTheOpenFrame(t *testing.T) {
	sc := NewScanner(nil, 0)
	var got []string
	frame := func(f Frame) { got = append(got, string(f.Data)) }
	if err := sc.Push([]byte("data: {\"a\":1}\n\ndata: {\"b\":2}"), frame); err != nil || len(got) != 1 {
		t.Fatalf("pushed: %q, %v", got, err)
	}
	if err := sc.End(frame); err != nil || strings.Join(got, "|") != `{"a":1}|{"b":2}` {
		t.Fatalf("ended: %q, %v", got, err)
	}
}

// Push refuses a frame over the limit, whole or still open, in one piece
// or in many, as Fill does.
func TestPushRefusesAFrameOverTheLimit(t *testing.T) {
	big := "data: " + strings.Repeat("x", 64)
	for _, stream := range []string{big + "\n\n", big} {
		for _, piece := range []int{len(stream), 5} {
			sc := NewScanner(nil, 32)
			var err error
			for off := 0; off < len(stream) && err == nil; off += piece {
				err = sc.Push([]byte(stream[off:min(off+piece, len(stream))]), func(f Frame) {
					t.Errorf("%.20q in pieces of %d: a frame of %d bytes came out", stream, piece, len(f.Raw))
				})
			}
			if err != ErrFrameTooLarge {
				t.Errorf("%.20q in pieces of %d: %v, want ErrFrameTooLarge", stream, piece, err)
			}
		}
	}
}

// A frame left open by one Push is completed from the next in the buffer;
// the frames after it in that Push are scanned where they are, not copied.
func TestPushScansInPlaceAfterTheOpenFrame(t *testing.T) {
	sc := NewScanner(nil, 0)
	first := []byte(`data: {"a":`)
	second := []byte("1}\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\n")
	var got []string
	var inPlace []bool
	frame := func(f Frame) {
		at := uintptr(unsafe.Pointer(unsafe.SliceData(f.Raw)))
		from := uintptr(unsafe.Pointer(unsafe.SliceData(second)))
		got = append(got, string(f.Data))
		inPlace = append(inPlace, at >= from && at < from+uintptr(len(second)))
	}
	for _, p := range [][]byte{first, second} {
		if err := sc.Push(p, frame); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, "|") != `{"a":1}|{"b":2}|{"c":3}` || fmt.Sprint(inPlace) != "[false true true]" {
		t.Errorf("frames %q, scanned in the pushed bytes: %v", got, inPlace)
	}
}

// Filled is what each Fill read, whether the buffer was compacted first,
// was taken from the pool for an idle scanner's one-byte wait, or the
// source ended with the bytes: their concatenation is the source.
func TestScannerFilledIsWhatEachFillRead(t *testing.T) {
	src := strings.Repeat(testkit.ContentEvent, 40) + "data: {\"type\":\"RUN_FINISHED\"}"
	for _, idle := range []bool{false, true} {
		sc := NewScanner(nil, 0)
		if idle {
			sc = NewIdleScanner(nil, 0)
		}
		r := &chunkReader{s: src, n: 37}
		var got strings.Builder
		var f Frame
		for {
			err := sc.Fill(r)
			got.Write(sc.Filled())
			if err != nil {
				t.Fatal(err)
			}
			ok, err := sc.Scan(&f)
			for ok && err == nil {
				ok, err = sc.Scan(&f)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != src {
			t.Errorf("idle %v: the bytes Filled returned differ from the source:\n got %q\nwant %q", idle, got.String(), src)
		}
		if err := sc.Fill(r); err != nil || len(sc.Filled()) != 0 {
			t.Errorf("idle %v: a Fill after the end: %v, %q", idle, err, sc.Filled())
		}
	}
}
