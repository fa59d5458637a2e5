// Package plot draws line charts as SVG, by hand (no plotting dependency):
// the bench's report and the load command's share it.
package plot

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Point is one (x, y) of a series.
type Point struct{ X, Y float64 }

// Series is one line of a plot; a point whose Y is NaN breaks it.
type Series struct {
	Name   string
	Points []Point
}

// Plot is a line chart written as SVG by hand (no plotting dependency).
type Plot struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#ad494a"}

const (
	svgW, svgH                     = 820, 480
	padL, padR, padT, padB float64 = 80, 230, 40, 55
)

// SVG renders the plot.
func (p Plot) SVG() string {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if (p.LogX && pt.X <= 0) || (p.LogY && pt.Y <= 0) || math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(p.Title))
	if math.IsInf(xmin, 0) {
		b.WriteString(`<text x="300" y="240">no data</text></svg>` + "\n")
		return b.String()
	}
	if !p.LogY {
		ymin = 0
	}
	xs := newAxis(xmin, xmax, p.LogX)
	ys := newAxis(ymin, ymax, p.LogY)
	plotW, plotH := svgW-padL-padR, svgH-padT-padB
	px := func(x float64) float64 { return padL + xs.frac(x)*plotW }
	py := func(y float64) float64 { return padT + (1-ys.frac(y))*plotH }
	// Grid and ticks.
	for _, t := range xs.ticks() {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, padT, x, padT+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, padT+plotH+18, fmtTick(t))
	}
	for _, t := range ys.ticks() {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y, padL+plotW, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y+4, fmtTick(t))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, svgH-12, html.EscapeString(p.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, html.EscapeString(p.YLabel))
	// Lines, markers, legend.
	for i, s := range p.Series {
		col := palette[i%len(palette)]
		// A NaN y ends a line: the next point starts another (a series with
		// a gap in time, such as one target's rounds between the other's).
		var pts, line []string
		draw := func() {
			if len(line) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(line, " "))
			}
			line = line[:0]
		}
		for _, pt := range s.Points {
			if math.IsNaN(pt.Y) {
				draw()
				continue
			}
			if (p.LogX && pt.X <= 0) || (p.LogY && pt.Y <= 0) || math.IsInf(pt.Y, 0) {
				continue
			}
			xy := fmt.Sprintf("%.1f,%.1f", px(pt.X), py(pt.Y))
			pts, line = append(pts, xy), append(line, xy)
		}
		draw()
		for _, xy := range pts {
			var x, y float64
			fmt.Sscanf(xy, "%g,%g", &x, &y)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x, y, col)
		}
		ly := padT + 10 + float64(i)*20
		lx := padL + plotW + 15
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly, lx+22, ly, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+28, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

type axis struct {
	lo, hi float64
	log    bool
}

func newAxis(lo, hi float64, log bool) axis {
	if log {
		// A little room around the data, not whole decades.
		lo, hi = lo/1.25, hi*1.25
		if hi/lo < 10 {
			mid := math.Sqrt(lo * hi)
			lo, hi = mid/math.Sqrt(10), mid*math.Sqrt(10)
		}
		return axis{lo, hi, true}
	}
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	return axis{math.Floor(lo/step) * step, math.Ceil(hi/step) * step, false}
}

func (a axis) frac(v float64) float64 {
	if a.log {
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

func (a axis) ticks() []float64 {
	var t []float64
	if a.log {
		// 1, 2 and 5 times each power of ten, within the range; only the
		// powers when the range spans more than three decades.
		mults := []float64{1, 2, 5}
		if a.hi/a.lo > 1000 {
			mults = []float64{1}
		}
		for p := math.Pow(10, math.Floor(math.Log10(a.lo))); p <= a.hi; p *= 10 {
			for _, m := range mults {
				if v := p * m; v >= a.lo && v <= a.hi {
					t = append(t, v)
				}
			}
		}
		return t
	}
	step := niceStep((a.hi - a.lo) / 5)
	for v := a.lo; v <= a.hi+step/1e6; v += step {
		t = append(t, v)
	}
	return t
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 1 || a == 0:
		return trimZero(fmt.Sprintf("%.1f", v))
	}
	return fmt.Sprintf("%.2g", v)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
