package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agui-relay/agui-relay/internal/load"
)

var elapsedLeft = regexp.MustCompile(`\[[0-9hms]*:[0-9hms]*\]`)

// On an 80-column terminal the progress line fits: the bar keeps its
// width and the description takes its shortest form that fits, for the
// largest counts and the longest labels (it wrapped, the bar shrunk to ||).
func TestProgressLineFitsTheTerminal(t *testing.T) {
	big := load.Progress{Elapsed: 59*time.Minute + 59*time.Second, Done: 12_345_678, Complete: 12_000_000, Failed: 345_678, InFlight: 5000,
		EventsPerSec: 1.23e6, RunsSec: 12345.6, Duration: time.Hour}
	for _, cols := range []int{60, 80, 100, 120, 200} {
		for _, label := range []string{"c=20", "c=500 relay round 4/4", "c=10000 a-long-target-name round 12/12"} {
			barWidth, descWidth := progressWidths(cols)
			desc := progressLine(label, big, descWidth)
			if n := utf8.RuneCountInString(desc); n > descWidth {
				t.Errorf("%d columns, %s: %d runes, want at most %d: %q", cols, label, n, descWidth, desc)
			}
			// The bar as it draws, elapsed and left at their longest.
			var buf bytes.Buffer
			bar := newProgressBar(3600, barWidth, label, &buf)
			bar.Describe(desc)
			bar.RenderBlank() //nolint:errcheck
			lines := strings.Split(buf.String(), "\r")
			line := strings.TrimRight(lines[len(lines)-1], " ")
			if !strings.HasSuffix(line, desc) {
				t.Fatalf("the bar did not draw %q: %q", desc, line)
			}
			// The times at their longest within an hour.
			line = elapsedLeft.ReplaceAllString(line, "[59m59s:1h0m0s]")
			if w := utf8.RuneCountInString(line); w > cols {
				t.Errorf("%d columns, %s: the line is %d wide: %q", cols, label, w, line)
			}
			if !strings.Contains(line, "|"+strings.Repeat(" ", barWidth-1)) {
				t.Errorf("%d columns: the bar shrank: %q", cols, line)
			}
		}
	}
	if got := progressLine("c=20", big, 0); !strings.Contains(got, "runs 12345678 done, 12000000 complete, 345678 failed, 5000 in flight; 1.23M events/s, 12345.6 runs/s") {
		t.Errorf("lines have it all: %q", got)
	}
}
