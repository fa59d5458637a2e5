package translate

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// This file holds the byte searches that decide, on every event of a
// translated run, whether a step must look closer. They answer exactly what
// bytes.Index answers, faster on short events full of common letters and
// quotes, where bytes.Index stops at every occurrence of its pattern's first
// byte.

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// indexPair returns the index of the first c0 immediately followed by c1 in
// b, or -1. It tests eight positions per step (SWAR), for pairs of bytes
// that are each common (two quotes) where a search for the first byte would
// stop every few bytes.
func indexPair(b []byte, c0, c1 byte) int {
	m0, m1 := lo8*uint64(c0), lo8*uint64(c1)
	i := 0
	for ; i+9 <= len(b); i += 8 {
		// A zero byte of v is a position i+k where both bytes match.
		v := (binary.LittleEndian.Uint64(b[i:]) ^ m0) | (binary.LittleEndian.Uint64(b[i+1:]) ^ m1)
		// The lowest byte this flags is the lowest zero byte of v (a
		// borrow only flags bytes above a zero one).
		if z := (v - lo8) &^ v & hi8; z != 0 {
			return i + bits.TrailingZeros64(z)/8
		}
	}
	for ; i+1 < len(b); i++ {
		if b[i] == c0 && b[i+1] == c1 {
			return i
		}
	}
	return -1
}

// indexRare returns the index of the first occurrence of pat in b, or -1,
// as bytes.Index does. Candidates are found by pat[k], which the caller
// picks rare in the text searched, with bytes.IndexByte (vectorised).
func indexRare(b []byte, pat string, k int) int {
	for from := 0; from < len(b); {
		j := bytes.IndexByte(b[from:], pat[k])
		if j < 0 {
			return -1
		}
		if at := from + j - k; at >= 0 && at+len(pat) <= len(b) && string(b[at:at+len(pat)]) == pat {
			return at
		}
		from += j + 1
	}
	return -1
}
