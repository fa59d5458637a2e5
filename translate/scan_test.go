package translate

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The searches must answer exactly what bytes.Index answers, whatever the
// alignment of a match or the length of the text.
func TestIndexAnchoredAgreesWithBytesIndex(t *testing.T) {
	pats := []struct {
		pat string
		k   int
	}{{`""`, 0}, {"null", 0}, {"null", 1}, {"null", 2}, {"messageId", 6}, {"subagentRunId", 7}, {`\u00`, 0}}
	alphabet := []byte(`"nulmesagIdRb\0 {}:,`)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b []byte) {
		t.Helper()
		for _, p := range pats {
			if got, want := indexAnchored(b, p.pat, p.k), bytes.Index(b, []byte(p.pat)); got != want {
				t.Fatalf("indexAnchored(%q, %q, %d) = %d, want %d", b, p.pat, p.k, got, want)
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

func FuzzIndexAnchored(f *testing.F) {
	f.Add([]byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`), "null", uint8(1))
	f.Add([]byte(`{"rawEvent":null}`), `""`, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, pat string, k uint8) {
		if len(pat) < 2 {
			return
		}
		kk := int(k) % (len(pat) - 1)
		if got, want := indexAnchored(b, pat, kk), bytes.Index(b, []byte(pat)); got != want {
			t.Fatalf("indexAnchored(%q, %q, %d) = %d, want %d", b, pat, kk, got, want)
		}
	})
}
