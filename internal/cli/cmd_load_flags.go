package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// durationFlag is a duration flag that, given a number without a unit (a
// habit of hey's -z users), says what it lacks rather than "parse error".
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("a duration takes a unit, for example %ss", s)
		}
		return fmt.Errorf("%q is not a duration (for example 5s, 1m30s, 500ms)", s)
	}
	*f.d = d
	return nil
}

// Get makes the flag a flag.Getter, so that negativeDuration sees it.
func (f durationFlag) Get() any { return *f.d }

// durationVar defines a durationFlag; usage names its value with a
// backquoted `duration`, as flag.PrintDefaults shows it.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

// parseRate reads --rate: a number of runs a second, or vegeta's
// N/PERIOD, PERIOD a Go duration whose bare unit is one of it (20/s,
// 20/1s, 100/1m, 1/500ms).
func parseRate(s string) (float64, error) {
	num, per, slash := strings.Cut(strings.TrimSpace(s), "/")
	v, err := strconv.ParseFloat(num, 64)
	if err == nil && slash {
		var d time.Duration
		if per != "" && (per[0] < '0' || per[0] > '9') && per[0] != '.' {
			per = "1" + per
		}
		if d, err = time.ParseDuration(per); err == nil && d <= 0 {
			err = errors.New("not a positive period")
		}
		if err == nil {
			v /= d.Seconds()
		}
	}
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a number of runs a second of at least 0 (20, or as vegeta takes it 20/s, 20/1s, 1200/1m)", s)
	}
	return v, nil
}
