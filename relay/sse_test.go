package relay

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
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
}

func TestScannerDropsFrameCutByError(t *testing.T) {
	broken := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: {\"half"), iotest.ErrReader(broken))
	got, _, err := scanAll(t, r, 0)
	if !errors.Is(err, broken) || len(got) != 1 {
		t.Fatalf("got %+v, %v; want one frame then the reset", got, err)
	}
}

func TestScannerBeforeReadFlushesBeforeBlocking(t *testing.T) {
	pr, pw := io.Pipe()
	sc := NewScanner(pr, 0)
	reads := 0
	sc.BeforeRead = func() { reads++ }
	go func() {
		pw.Write([]byte("data: 1\n\ndata: 2\n\n"))
		pw.Write([]byte("data: 3\n\n"))
		pw.Close()
	}()
	var n int
	for {
		_, err := sc.Next()
		if err != nil {
			break
		}
		n++
		if n == 1 && reads != 1 {
			t.Fatalf("reads before first frame = %d", reads)
		}
		if n == 2 && reads != 1 {
			t.Fatalf("second frame was buffered, yet the scanner read again (%d)", reads)
		}
	}
	if n != 3 {
		t.Fatalf("frames = %d", n)
	}
}
