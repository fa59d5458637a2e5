package negotiate

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{"1.0", Version{1, 0, 0}, false},
		{"1.10", Version{1, 10, 0}, false},
		{"2.0", Version{2, 0, 0}, false},
		{"0.0.45", Version{0, 0, 45}, false},
		{"0.0.37", Version{0, 0, 37}, false},
		{"0.1", Version{0, 1, 0}, false},
		{"1.0.0", Version{}, true}, // a published version has two components
		{"0.0", Version{}, true},
		{"1", Version{}, true},
		{"1.x", Version{}, true},
		{"", Version{}, true},
		{"v1.0", Version{}, true},
		{" 1.0", Version{}, true},
		{"1.-1", Version{}, true},
		{"0.1.2", Version{}, true},
		{"1234567890.0", Version{}, true},
		{"0.0.1.2", Version{}, true},
		{"1.0.", Version{}, true},
		{".1", Version{}, true},
		{"1..0", Version{}, true},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("Parse(%q).String() = %q", tc.in, got.String())
		}
	}
}

// Every run parses the versions it declares: a well-formed one costs no
// allocation.
func TestParseDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Parse("0.0.45"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per parse", n)
	}
}

func TestCompareIsNumericPerComponent(t *testing.T) {
	ordered := []string{"0.0.37", "0.0.40", "0.0.45", "0.0.59", "0.1", "1.0", "1.2", "1.9", "1.10", "2.0"}
	for i := range ordered {
		for j := range ordered {
			a, b := MustParse(ordered[i]), MustParse(ordered[j])
			want := cmp(i, j)
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestProfileOf(t *testing.T) {
	tests := map[string]string{
		"0.0.30": "P30", "0.0.37": "P37", "0.0.40": "P37", "0.0.41": "P41", "0.0.44": "P41",
		"0.0.45": "P45", "0.0.48": "P45", "0.0.53": "P45", "0.0.54": "P54", "0.0.58": "P54",
		"0.0.59": "P59", "1.0": "V1", "1.3": "V1",
	}
	for v, want := range tests {
		if got := ProfileOf(MustParse(v)).Name; got != want {
			t.Errorf("ProfileOf(%s) = %s, want %s", v, got, want)
		}
	}
}

// The profile table must cover the legacy releases without gap or overlap,
// oldest first, so that ProfileOf is well defined.
func TestProfilesAreContiguous(t *testing.T) {
	for i := 1; i < len(Profiles); i++ {
		prev, cur := Profiles[i-1], Profiles[i]
		if !prev.First.AtLeast(Version{}) || prev.Last.Less(prev.First) {
			t.Errorf("%s: Last %s before First %s", prev.Name, prev.Last, prev.First)
		}
		if cur.First.Legacy() && cur.First != (Version{0, 0, prev.Last.Patch + 1}) {
			t.Errorf("%s starts at %s, want right after %s's %s", cur.Name, cur.First, prev.Name, prev.Last)
		}
		if !prev.Last.Less(cur.First) {
			t.Errorf("%s overlaps %s", prev.Name, cur.Name)
		}
	}
}

// A configured version names a release the relay knows; the refusal lists
// them as ranges.
func TestParseKnown(t *testing.T) {
	if got := KnownReleases(); got != "0.0.27 to 0.0.59, 1.0" {
		t.Errorf("KnownReleases() = %q", got)
	}
	for _, s := range []string{"0.0.27", "0.0.45", "0.0.59", "1.0"} {
		if v, err := ParseKnown(s); err != nil || v.String() != s {
			t.Errorf("ParseKnown(%q) = %v, %v", s, v, err)
		}
	}
	for _, s := range []string{"2.0", "1.1", "0.0.450", "0.0.4", "0.0.26", "0.0.60", "3.1"} {
		_, err := ParseKnown(s, "auto")
		if err == nil || err.Error() != s+" is not a release the relay knows (0.0.27 to 0.0.59, 1.0, auto; see agui-relay versions)" {
			t.Errorf("ParseKnown(%q) error = %v", s, err)
		}
	}
	for _, s := range []string{"latest", "", "1.0.0"} {
		_, err := ParseKnown(s)
		if err == nil || !strings.HasSuffix(err.Error(), "; the relay knows 0.0.27 to 0.0.59, 1.0 (see agui-relay versions)") {
			t.Errorf("ParseKnown(%q) error = %v", s, err)
		}
	}
}
