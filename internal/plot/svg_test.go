package plot

import (
	"math"
	"strings"
	"testing"
)

// A NaN point breaks a series' line in two; its markers stay.
func TestNaNBreaksTheLine(t *testing.T) {
	p := Plot{Title: "t", Series: []Series{{Name: "A", Points: []Point{{1, 1}, {2, 2}, {3, math.NaN()}, {4, 1}, {5, 3}}}}}
	svg := p.SVG()
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2:\n%s", n, svg)
	}
	if n := strings.Count(svg, "<circle"); n != 4 {
		t.Errorf("%d markers, want 4", n)
	}
}
