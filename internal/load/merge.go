package load

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// HDR returns r's whole-load histograms by timing key ("first_event", ...),
// each in HdrHistogram's V2 compressed encoding, base64: the form
// HdrHistogram's logs hold, which another result's SetHDR reads back
// exactly, so that results of loads run on several machines add up to the
// percentiles of all their runs (agui-relay load report), never to an
// average of percentiles. nil when r has no histograms (one unmarshalled
// from JSON).
func (r *Result) HDR() (map[string]string, error) {
	if r.hists[0] == nil {
		return nil, nil
	}
	out := make(map[string]string, nTimings)
	for _, t := range Timings() {
		b, err := r.hists[t].Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", timingKeys[t], err)
		}
		out[timingKeys[t]] = string(b)
	}
	return out, nil
}

// SetHDR gives r the histograms HDR wrote (one per timing, the same range
// and precision as a load's) and summarizes them into r.Timings again.
func (r *Result) SetHDR(enc map[string]string) error {
	var h hists
	for _, t := range Timings() {
		s, ok := enc[timingKeys[t]]
		if !ok {
			return fmt.Errorf("no %s histogram", timingKeys[t])
		}
		d, err := hdrhistogram.Decode([]byte(s))
		if err != nil {
			return fmt.Errorf("the %s histogram: %w", timingKeys[t], err)
		}
		if d.LowestTrackableValue() != 1 || d.HighestTrackableValue() != histMaxMicros || d.SignificantFigures() != histDigits {
			return fmt.Errorf("the %s histogram covers %d to %d µs to %d figures, not a load's 1 to %d to %d",
				timingKeys[t], d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(), int64(histMaxMicros), histDigits)
		}
		h[t] = d
	}
	r.hists = h
	r.finish()
	return nil
}

// MergeConcurrent adds up the results of loads that ran at the same time,
// on several machines, against the same endpoint: counts, errors and
// histograms add up as Merge's rounds do; the concurrency is the sum; the
// duration is the span from the earliest start to the latest end, so that
// the rates are every run over that span (vegeta's report of several
// attackers' results counts so). The time series is left empty: each
// part's is on its own machine's clock and intervals. The parts must have
// their histograms (SetHDR); they are not changed.
func MergeConcurrent(parts []*Result) *Result {
	m := &Result{}
	var end float64
	var conc int
	var rate, startRate float64
	for i, p := range parts {
		m.Merge(p)
		conc += p.Concurrency
		rate += p.Rate
		startRate += p.StartRate
		if i == 0 || p.Started.Before(m.Started) {
			m.Started = p.Started
		}
	}
	for _, p := range parts {
		end = max(end, p.Started.Sub(m.Started).Seconds()+p.Seconds)
	}
	m.Concurrency, m.Seconds, m.Rate, m.StartRate, m.Series = conc, end, rate, startRate, nil
	m.finish()
	return m
}
