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

// habitHint is what load takes instead of name, another load generator's
// flag that load does not define; "" for any other. "flag provided but not
// defined" alone leaves a k6, vegeta or hey user to search the help.
func habitHint(name string) string {
	switch name {
	case "vus":
		return "k6's --vus is -c here (concurrent runs)"
	case "u":
		return "k6's -u (--vus) is -c here (concurrent runs)"
	case "iterations":
		return "k6's --iterations is -n here (runs)"
	case "i":
		return "k6's -i (--iterations) is -n here (runs)"
	case "duration":
		return "k6's and vegeta's --duration is -d here (-d 30s)"
	case "z":
		return "hey's -z is -d here (-d 30s)"
	case "workers":
		return "vegeta's -workers is -c here (concurrent runs)"
	case "q":
		return "hey's -q, a rate per worker, is --rate here, for the whole load"
	case "timeout":
		return "vegeta's -timeout is --run-timeout here, beside --connect-timeout, --headers-timeout and --idle-timeout"
	case "t":
		return "hey's -t is --run-timeout here, a duration (-t 20 is --run-timeout 20s)"
	case "output":
		return "vegeta's -output is --out DIR here (report.md, results.json, runs.jsonl)"
	case "o":
		return "hey's -o is --out DIR here (report.md, results.json, runs.jsonl)"
	case "body":
		return "vegeta's -body is --input FILE here, a RunAgentInput"
	case "D":
		return "hey's -D is --input FILE here, a RunAgentInput"
	case "m":
		return "load always POSTs a RunAgentInput (--input FILE)"
	}
	return ""
}

// habitFlag reports the first flag of args that fs does not define and
// another load generator does, saying what fs takes instead; nil when
// there is none, and the flag package then reports any other.
func habitFlag(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			if hint := habitHint(name); hint != "" {
				return fmt.Errorf("flag provided but not defined: -%s (%s)", name, hint)
			}
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) {
			i++ // the flag's value, which may begin with "-"
		}
	}
	return nil
}

// k6Output reports whether kind is one of k6's --out outputs (json=FILE,
// csv=FILE...), which a k6 user gives --out and load would take for a
// directory's name.
func k6Output(kind string) bool {
	switch kind {
	case "json", "csv", "influxdb", "statsd", "cloud", "experimental-prometheus-rw", "experimental-opentelemetry", "opentelemetry", "dashboard", "web-dashboard":
		return true
	}
	return false
}
