// Package negotiate parses and compares AG-UI protocol versions, maps legacy
// SDK releases onto the legacy profiles, and decides per run what the relay
// emits and declares.
package negotiate

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a protocol version as the relay reasons about it.
//
// A published protocol version is MAJOR.MINOR ("1.0"). A peer from before the
// protocol carried a version is named by the TypeScript SDK release it matches
// ("0.0.45"), which is Major 0, Minor 0, Patch 45. Published versions have
// Patch 0 and are never written with a third component.
type Version struct {
	Major, Minor, Patch int
}

// Current is the newest protocol version the relay implements and emits.
var Current = Version{1, 0, 0}

// OldestSupported is the oldest legacy release the relay can serve faithfully.
// Older consumers cannot take interleaved messages or several runs on one
// stream, and a faithful downgrade would have to reorder events.
var OldestSupported = Version{0, 0, 37}

// Parse reads a version as the contract spells it: MAJOR.MINOR for a published
// version, 0.0.N for a legacy SDK release. Anything else is an error; callers
// that meet an uninterpretable in-band declaration treat it as newer (see
// ParseDeclared).
func Parse(s string) (Version, error) {
	// Part by part, with no allocation: every run parses the versions its
	// input and its RUN_STARTED declare.
	var nums [3]int
	n := 0
	for rest, more := s, true; more; n++ {
		var p string
		p, rest, more = strings.Cut(rest, ".")
		if n == len(nums) || p == "" || len(p) > 9 || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR (1.0) or a legacy SDK release 0.0.N", s)
		}
		nums[n], _ = strconv.Atoi(p)
	}
	switch {
	case n == 2 && !(nums[0] == 0 && nums[1] == 0):
		return Version{nums[0], nums[1], 0}, nil
	case n == 3 && nums[0] == 0 && nums[1] == 0:
		return Version{0, 0, nums[2]}, nil
	}
	return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR (1.0) or a legacy SDK release 0.0.N", s)
}

// MustParse is Parse for constants; it panics on a malformed literal.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String spells the version the way it is declared.
func (v Version) String() string {
	if v.Legacy() {
		return "0.0." + strconv.Itoa(v.Patch)
	}
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
}

// Legacy reports whether v names a pre-1.0 SDK release (a peer that predates
// the protocolVersion field).
func (v Version) Legacy() bool { return v.Major == 0 && v.Minor == 0 }

// IsZero reports whether v is the zero Version (no version known).
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or +1, comparing numerically component by component
// (so 1.10 is newer than 1.9).
func (v Version) Compare(w Version) int {
	switch {
	case v.Major != w.Major:
		return cmp(v.Major, w.Major)
	case v.Minor != w.Minor:
		return cmp(v.Minor, w.Minor)
	default:
		return cmp(v.Patch, w.Patch)
	}
}

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// AtLeast reports whether v is w or newer.
func (v Version) AtLeast(w Version) bool { return v.Compare(w) >= 0 }

func cmp(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
