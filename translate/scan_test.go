package translate

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The searches must answer exactly what bytes.Index answers, whatever the
// alignment of a match or the length of the text.
func TestIndexRareAgreesWithBytesIndex(t *testing.T) {
	pats := []struct {
		pat string
		k   int
	}{{`""`, 0}, {"null", 0}, {"null", 1}, {"null", 3}, {"messageId", 7}, {"subagentRunId", 8}, {`\u00`, 0}}
	alphabet := []byte(`"nulmesagIdRb\0 {}:,`)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b []byte) {
		t.Helper()
		for _, p := range pats {
			if got, want := indexRare(b, p.pat, p.k), bytes.Index(b, []byte(p.pat)); got != want {
				t.Fatalf("indexRare(%q, %q, %d) = %d, want %d", b, p.pat, p.k, got, want)
			}
		}
		for _, pair := range []string{`""`, "ll", "eI", `\u`} {
			if got, want := indexPair(b, pair[0], pair[1]), bytes.Index(b, []byte(pair)); got != want {
				t.Fatalf("indexPair(%q, %q) = %d, want %d", b, pair, got, want)
			}
		}
	}
	for n := 0; n < 40; n++ {
		for range 2000 {
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			check(b)
		}
	}
	// Every alignment of a match, and near misses, in longer text.
	for _, p := range pats {
		for at := 0; at < 40; at++ {
			for _, miss := range []bool{false, true} {
				b := bytes.Repeat([]byte("x"), 64)
				copy(b[at:], p.pat)
				if miss {
					b[at+len(p.pat)-1] ^= 1
				}
				check(b)
				check(b[:at+len(p.pat)])
			}
		}
	}
	check(nil)
}

func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`), "null", uint8(1))
	f.Add([]byte(`{"rawEvent":null}`), `""`, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, pat string, k uint8) {
		if len(pat) < 2 {
			return
		}
		kk := int(k) % len(pat)
		if got, want := indexRare(b, pat, kk), bytes.Index(b, []byte(pat)); got != want {
			t.Fatalf("indexRare(%q, %q, %d) = %d, want %d", b, pat, kk, got, want)
		}
		if got, want := indexPair(b, pat[0], pat[1]), bytes.Index(b, []byte(pat[:2])); got != want {
			t.Fatalf("indexPair(%q, %q) = %d, want %d", b, pat[:2], got, want)
		}
	})
}

func BenchmarkScan(b *testing.B) {
	evs := [][]byte{
		[]byte(`{"type":"REASONING_MESSAGE_CONTENT","messageId":"reasoning-run-1-1","delta":"the relay needs an #12:1700000000000000012#"}`),
		[]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-run-1-3","delta":" forwards unless the #123:1700000000000000123#"}`),
		[]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_01","delta":"I will call the weather tool, then I would summarise it for you."}`),
	}
	for _, c := range []struct {
		name string
		f    func([]byte) bool
	}{
		{"bytes.Index/null", func(e []byte) bool { return bytes.Contains(e, []byte("null")) }},
		{"rare/null", func(e []byte) bool { return indexRare(e, "null", 1) >= 0 }},
		{"bytes.Index/messageId", func(e []byte) bool { return bytes.Contains(e, []byte("messageId")) }},
		{"rare/messageId", func(e []byte) bool { return indexRare(e, "messageId", 7) >= 0 }},
		{"bytes.Index/empty", func(e []byte) bool { return bytes.Contains(e, []byte(`""`)) }},
		{"pair/empty", func(e []byte) bool { return indexPair(e, '"', '"') >= 0 }},
		{"bytes.Index/subagent", func(e []byte) bool { return bytes.Contains(e, []byte("subagentRunId")) }},
		{"rare/subagent", func(e []byte) bool { return indexRare(e, "subagentRunId", 8) >= 0 }},
		{"rare/backslash", func(e []byte) bool { return bytes.IndexByte(e, '\\') >= 0 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, e := range evs {
					c.f(e)
				}
			}
		})
	}
}
