package translate

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// corpusEvents are the events of every stream under testdata: each line
// that is an SSE data field holding an object.
func corpusEvents(tb testing.TB) [][]byte {
	tb.Helper()
	var evs [][]byte
	filepath.WalkDir(filepath.Join("..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if ev, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && len(ev) > 0 && ev[0] == '{' {
				evs = append(evs, bytes.Clone(ev))
			}
		}
		return nil
	})
	if len(evs) < 100 {
		tb.Fatalf("%d events under testdata", len(evs))
	}
	return evs
}

// checkMembers fails when topMembers does not read a valid event's members
// as gjson does (keys, values and their offsets, in order).
func checkMembers(t *testing.T, ev []byte) {
	t.Helper()
	ms, ok := topMembers(ev, nil)
	if !gjson.ValidBytes(ev) || !gjson.ParseBytes(ev).IsObject() {
		return
	}
	items := Items(Root(ev), nil)
	if !ok || len(ms) != len(items) {
		t.Fatalf("%q: read ok %v, %d members; gjson reads %d", ev, ok, len(ms), len(items))
	}
	for i, it := range items {
		m := ms[i]
		if m.start() != it.Start || m.end != it.End || m.val != it.Value.Index ||
			string(ev[m.key:m.keyEnd]) != it.Key.Raw[1:len(it.Key.Raw)-1] || m.escaped != (it.Key.Str != it.Key.Raw[1:len(it.Key.Raw)-1]) {
			t.Fatalf("%q: member %d read %+v, gjson %s:%s at %d-%d", ev, i, m, it.Key.Raw, it.Value.Raw, it.Start, it.End)
		}
	}
}

func TestTopMembersReadsWhatGjsonReads(t *testing.T) {
	for _, ev := range corpusEvents(t) {
		checkMembers(t, ev)
	}
	for _, ev := range []string{
		`{}`, ` { } `, "{\"a\" :\t\"x\" ,\n\"b\":[1,{\"c\":\"]}\"}],\"d\":-1.5e3 , \"e\":null}\r\n",
		`{"k\"ey":"v\\","x":"\\\"","y":{"z":{}},"w":true}`, `{"\u0074ype":"X","t":false}`,
	} {
		checkMembers(t, []byte(ev))
	}
}

// What does not read as an object is said so, never read wrong.
func TestTopMembersRefusesWhatIsNoObject(t *testing.T) {
	for _, ev := range []string{
		``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":"b"`, `{"a":"b\"}`, `{"a":"b",}`, `{"a":"b"}x`,
		`{"a" "b"}`, `{"a":"b" "c":1}`, `{a:1}`, `{"a":[1,2}`, `{"a":{"b":1}`,
	} {
		if _, ok := topMembers([]byte(ev), nil); ok {
			t.Errorf("%q read as an object", ev)
		}
	}
}

func FuzzTopMembers(f *testing.F) {
	for _, ev := range corpusEvents(f)[:200] {
		f.Add(ev)
	}
	f.Fuzz(func(t *testing.T, ev []byte) { checkMembers(t, ev) })
}

// The chain reads an event's members once for every step that asks, and
// again for the next event, even at the same address.
func TestMembersReadOncePerEvent(t *testing.T) {
	r := &Run{}
	// On the heap, as a scanner's buffer is (a buffer larger than the
	// stack takes): the read is known by its address, and a stack copied
	// to grow moves a buffer on it between two reads.
	buf := append(make([]byte, 0, 64<<10+1), `{"type":"A","x":1}`...)
	r.hop++
	ms, _ := r.members(buf)
	if len(ms) != 2 {
		t.Fatalf("%d members", len(ms))
	}
	first := ms[1]
	copy(buf, `{"t":"A","xyza":1}`)
	if ms, _ := r.members(buf); len(ms) != 2 || ms[1] != first {
		t.Fatalf("within a hop the read is reused: %+v", ms)
	}
	r.hop++
	if ms, _ := r.members(buf); len(ms) != 2 || string(buf[ms[1].key:ms[1].keyEnd]) != "xyza" {
		t.Fatalf("the next hop read the old event: %+v", ms)
	}
	if ms, ok := r.members(buf[:len(buf)-1]); ok {
		t.Fatalf("other bytes, another read: %+v", ms)
	}
}
