package negotiate

import (
	"strings"
	"testing"
)

func TestParsePyRelease(t *testing.T) {
	for _, c := range []struct {
		in           string
		want         PyRelease
		named, isErr bool
	}{
		{"ag-ui-protocol@0.1.19", PyRelease{0, 1, 19}, true, false},
		{"py0.1.19", PyRelease{0, 1, 19}, true, false},
		{"py0.1.4", PyRelease{0, 1, 4}, true, false},
		{"py1.0.0", PyRelease{1, 0, 0}, true, false},
		{"py0.1.3", PyRelease{0, 1, 3}, true, true},   // before the first release in the monorepo
		{"py0.1.23", PyRelease{0, 1, 23}, true, true}, // not a release the relay knows
		{"py0.1", PyRelease{}, true, true},
		{"py0.1.019", PyRelease{}, true, true},
		{"ag-ui-protocol@", PyRelease{}, true, true},
		{"0.0.45", PyRelease{}, false, false},
		{"1.0", PyRelease{}, false, false},
	} {
		got, named, err := ParsePyRelease(c.in)
		if named != c.named || (err != nil) != c.isErr || (!c.isErr && got != c.want) {
			t.Errorf("ParsePyRelease(%q) = %v, %v, %v; want %v, %v, error %v", c.in, got, named, err, c.want, c.named, c.isErr)
		}
	}
	if r := (PyRelease{0, 1, 19}); r.Name() != "ag-ui-protocol@0.1.19" || r.String() != "0.1.19" {
		t.Errorf("names of 0.1.19: %q, %q", r.Name(), r.String())
	}
}

// The table's invariants: releases in order, each once, each with its
// source; what a newer release reads never goes back to an older
// TypeScript release; 0.1.x is legacy on both sides and 1.0.0 is current.
func TestPyProfilesTable(t *testing.T) {
	for i, p := range PyProfiles {
		if p.Source == "" || p.Adds == "" {
			t.Errorf("%s: no source or no summary", p.Release)
		}
		if i == 0 {
			continue
		}
		prev := PyProfiles[i-1]
		if !prev.Release.Less(p.Release) {
			t.Errorf("%s follows %s", p.Release, prev.Release)
		}
		if p.Events.Less(prev.Events) || p.Input.Less(prev.Input) {
			t.Errorf("%s reads older TypeScript shapes than %s", p.Release, prev.Release)
		}
		if p.Release.Major == 0 && (!p.Events.Legacy() || !p.Input.Legacy()) {
			t.Errorf("%s maps onto a published protocol version", p.Release)
		}
		if p.Release.Major == 0 && p.Release.Patch > 20 && !strings.Contains(p.Source, "not in the stored history") {
			t.Errorf("%s: released after the stored history, its source says otherwise", p.Release)
		}
	}
	last := PyProfiles[len(PyProfiles)-1]
	if last.Release != (PyRelease{1, 0, 0}) || last.Events != Current || last.Input != Current {
		t.Errorf("the newest Python release is not 1.0.0 on the 1.0 profile: %+v", last)
	}
}

func TestDecidePythonInput(t *testing.T) {
	ip := DecidePythonInput(Current, PyRelease{0, 1, 10})
	if !ip.Translate || ip.To != (Version{Patch: 40}) || ip.Declare != DeclareOmit || ip.Python != (PyRelease{0, 1, 10}) {
		t.Errorf("0.1.10 from a 1.0 consumer: %+v", ip)
	}
	// Equal in TypeScript terms, still translated: the Python rules apply.
	ip = DecidePythonInput(Version{Patch: 54}, PyRelease{0, 1, 19})
	if !ip.Translate || ip.To != (Version{Patch: 54}) {
		t.Errorf("0.1.19 from a 0.0.54 consumer: %+v", ip)
	}
	ip = DecidePythonInput(Current, PyRelease{1, 0, 0})
	if !ip.Translate || ip.Declare != DeclareSet || ip.Declared != "1.0" {
		t.Errorf("1.0.0 from a 1.0 consumer: %+v", ip)
	}
}

// A Python producer is never taken for the TypeScript release its events
// match: a consumer of that release still gets a translated run.
func TestDecidePythonProducer(t *testing.T) {
	py := PyRelease{0, 1, 11}
	prof, _ := PyProfileOf(py)
	p := Decide(prof.Events, Peer{Configured: prof.Events, Python: py})
	if !p.Translate || p.Declare != DeclareOmit {
		t.Errorf("0.1.11 toward a %s consumer: %+v", prof.Events, p)
	}
	p = Decide(prof.Events, Peer{Configured: prof.Events})
	if p.Translate {
		t.Errorf("the TypeScript release itself toward its own consumer is translated: %+v", p)
	}
	p = Decide(Current, Peer{Configured: prof.Events, Python: py})
	if !p.Translate || p.Declare != DeclareSet || p.Declared != "1.0" {
		t.Errorf("0.1.11 toward a 1.0 consumer: %+v", p)
	}
}
