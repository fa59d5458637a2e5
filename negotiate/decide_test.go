package negotiate

import (
	"strings"
	"testing"
)

// TestConsumerVersion walks the consumer side of "Version negotiation" in the
// versioning draft.
func TestConsumerVersion(t *testing.T) {
	tests := []struct {
		rule     string
		peer     Peer
		want     Version
		how      Learnt
		warns    bool
		rejected bool
	}{
		{"a consumer declares the version it speaks on RunAgentInput.protocolVersion",
			Peer{Declared: "1.0", HasDeclared: true}, Current, Declared, false, false},
		{"the in-band declaration is authoritative over configuration",
			Peer{Declared: "1.0", HasDeclared: true, Configured: MustParse("0.0.45")}, Current, Declared, false, false},
		{"absence identifies a peer from before the field; configuration names its release",
			Peer{Configured: MustParse("0.0.45")}, MustParse("0.0.45"), Configured, false, false},
		{"absence is a declaration too: with nothing configured (auto), the consumer predates the field and reads as the newest release before it",
			Peer{}, MustParse("0.0.59"), Inferred, false, false},
		{"configured 1.0 reads an undeclared consumer as current",
			Peer{Configured: Current}, Current, Configured, false, false},
		{"a declared legacy release is taken at its word too",
			Peer{Declared: "0.0.45", HasDeclared: true}, MustParse("0.0.45"), Declared, false, false},
		{"a newer minor of the line is served, not rejected, with a warning; the relay emits what it implements",
			Peer{Declared: "1.1", HasDeclared: true}, Current, Declared, true, false},
		{"1.10 is newer than 1.9: still served as current",
			Peer{Declared: "1.10", HasDeclared: true}, Current, Declared, true, false},
		{"a newer major is served too: additions are safe",
			Peer{Declared: "2.0", HasDeclared: true}, Current, Declared, true, false},
		{"a version far ahead is served as newer, with a warning",
			Peer{Declared: "99.0", HasDeclared: true}, Current, Declared, true, false},
		{"a legacy release after the last one names no release: handled like a newer one",
			Peer{Declared: "0.0.450", HasDeclared: true}, Current, Declared, true, false},
		{"a declaration that cannot be interpreted is handled like a newer one: proceed, warn",
			Peer{Declared: "1.0.0", HasDeclared: true}, Current, Declared, true, false},
		{"an empty declaration cannot be interpreted either",
			Peer{Declared: "", HasDeclared: true}, Current, Declared, true, false},
		{"a consumer older than the relay can serve faithfully is refused",
			Peer{Configured: MustParse("0.0.30")}, MustParse("0.0.30"), Configured, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			got, how, warnings, err := ConsumerVersion(tc.peer)
			if (err != nil) != tc.rejected {
				t.Fatalf("err = %v, rejected want %v", err, tc.rejected)
			}
			if got != tc.want {
				t.Errorf("version = %s, want %s", got, tc.want)
			}
			if how != tc.how {
				t.Errorf("learnt = %q, want %q", how, tc.how)
			}
			if (len(warnings) > 0) != tc.warns {
				t.Errorf("warnings = %q, want some: %v", warnings, tc.warns)
			}
		})
	}
}

// TestDecide walks the producer side and the proxy rules of "Version
// negotiation": what passes untranslated, and what each run declares.
func TestDecide(t *testing.T) {
	legacy45 := MustParse("0.0.45")
	tests := []struct {
		rule        string
		consumer    Version
		producer    Peer
		translate   bool
		declare     Declaration
		declared    string
		predates    bool
		warns       bool
		wantProduce Version
	}{
		{"same version both sides: forwarded untranslated, the producer's declaration kept",
			Current, Peer{Declared: "1.0", HasDeclared: true}, false, DeclareKeep, "", false, false, Current},
		{"a producer's own declaration wins over configuration",
			Current, Peer{Declared: "1.0", HasDeclared: true, Configured: legacy45}, false, DeclareKeep, "", false, false, Current},
		{"a producer without a declaration predates the field: its stream is translated and the relay declares what it emits",
			Current, Peer{}, true, DeclareSet, "1.0", true, false, Version{}},
		{"a producer configured as legacy: translated, declared as what the relay emits",
			Current, Peer{Configured: legacy45}, true, DeclareSet, "1.0", false, false, legacy45},
		{"a producer configured as current, not declaring: untranslated",
			Current, Peer{Configured: Current}, false, DeclareKeep, "", false, false, Current},
		{"a newer producer minor toward a current consumer: proceed untranslated, declaration kept, warn",
			Current, Peer{Declared: "1.1", HasDeclared: true}, false, DeclareKeep, "", false, true, MustParse("1.1")},
		{"1.10 is newer than 1.9 (numeric comparison): kept, warn",
			Current, Peer{Declared: "1.10", HasDeclared: true}, false, DeclareKeep, "", false, true, MustParse("1.10")},
		{"an uninterpretable producer declaration is handled like a newer one: proceed, warn",
			Current, Peer{Declared: "1.0.0", HasDeclared: true}, false, DeclareKeep, "", false, true, Current},
		{"a legacy release number is no protocol version: uninterpretable as a declaration",
			Current, Peer{Declared: "0.0.45", HasDeclared: true}, false, DeclareKeep, "", false, true, Current},
		{"toward a consumer that predates the field nothing is declared",
			legacy45, Peer{Declared: "1.0", HasDeclared: true}, true, DeclareOmit, "", false, false, Current},
		{"a legacy consumer and a producer that predates the field: translated, nothing declared",
			legacy45, Peer{}, true, DeclareOmit, "", true, false, Version{}},
		{"a legacy consumer and a producer configured as the same release: untranslated",
			legacy45, Peer{Configured: legacy45}, false, DeclareKeep, "", false, false, legacy45},
		{"a legacy consumer and an older legacy producer: translated (retired shapes upgraded)",
			legacy45, Peer{Configured: MustParse("0.0.40")}, true, DeclareOmit, "", false, false, MustParse("0.0.40")},
		{"a legacy consumer and a newer producer: translated, nothing declared, warn",
			legacy45, Peer{Declared: "1.2", HasDeclared: true}, true, DeclareOmit, "", false, true, MustParse("1.2")},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			p := Decide(tc.consumer, tc.producer)
			if p.Translate != tc.translate || p.Declare != tc.declare || p.Declared != tc.declared {
				t.Errorf("plan = translate %v declare %v %q; want %v %v %q", p.Translate, p.Declare, p.Declared, tc.translate, tc.declare, tc.declared)
			}
			if p.ProducerPredatesField != tc.predates || p.Producer != tc.wantProduce {
				t.Errorf("producer = %s (predates %v), want %s (predates %v)", p.Producer, p.ProducerPredatesField, tc.wantProduce, tc.predates)
			}
			if (len(p.Warnings) > 0) != tc.warns {
				t.Errorf("warnings = %q, want some: %v", p.Warnings, tc.warns)
			}
			if p.Consumer != tc.consumer {
				t.Errorf("consumer = %s, want %s", p.Consumer, tc.consumer)
			}
		})
	}
}

// Each run of a multi-run stream is decided on its own: the decision is a
// pure function of the run's declaration, with no memory of earlier runs.
func TestDecideIsPerRun(t *testing.T) {
	runs := []Peer{{}, {Declared: "1.0", HasDeclared: true}, {}, {Declared: "1.1", HasDeclared: true}}
	want := []Declaration{DeclareSet, DeclareKeep, DeclareSet, DeclareKeep}
	for i, r := range runs {
		if got := Decide(Current, r).Declare; got != want[i] {
			t.Errorf("run %d: declare %v, want %v", i, got, want[i])
		}
	}
}

func TestDecideInput(t *testing.T) {
	tests := []struct {
		rule               string
		consumer, producer Version
		translate          bool
		declare            Declaration
		declared           string
	}{
		{"same version: the input is forwarded byte for byte",
			Current, Version{}, false, DeclareKeep, ""},
		{"a legacy consumer toward a producer of unknown version (treated as current): upgrade, declare what the relay now speaks",
			MustParse("0.0.45"), Version{}, true, DeclareSet, "1.0"},
		{"toward a producer known to predate the field the declaration is omitted",
			Current, MustParse("0.0.45"), true, DeclareOmit, ""},
		{"legacy to the same legacy release: untouched",
			MustParse("0.0.45"), MustParse("0.0.45"), false, DeclareKeep, ""},
		{"a producer configured newer than the relay reads what the relay speaks",
			Current, MustParse("1.3"), false, DeclareKeep, ""},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			p := DecideInput(tc.consumer, tc.producer)
			if p.Translate != tc.translate || p.Declare != tc.declare || p.Declared != tc.declared {
				t.Errorf("plan = %+v", p)
			}
			if p.From != tc.consumer {
				t.Errorf("from = %s", p.From)
			}
		})
	}
}

func TestSupportedSaysWhy(t *testing.T) {
	ok, why := Supported(MustParse("0.0.36"))
	if ok || !strings.Contains(why, "reorder") {
		t.Errorf("Supported(0.0.36) = %v, %q", ok, why)
	}
	if ok, _ := Supported(OldestSupported); !ok {
		t.Errorf("OldestSupported not supported")
	}
}

// TestNewestBeforeField: an undeclared consumer reads as the newest legacy
// release of the profile table, the one CopilotKit 1.75 bundles
// (@ag-ui/client 0.0.59), and the relay serves it.
func TestNewestBeforeField(t *testing.T) {
	got := NewestBeforeField()
	if got != MustParse("0.0.59") {
		t.Fatalf("NewestBeforeField = %s, want 0.0.59", got)
	}
	if !got.Legacy() || !got.Less(Current) {
		t.Errorf("%s is not a release from before the field", got)
	}
	for _, p := range Profiles {
		if p.Last.Legacy() && got.Less(p.Last) {
			t.Errorf("profile %s ends at %s, newer than %s", p.Name, p.Last, got)
		}
	}
	if ok, why := Supported(got); !ok {
		t.Errorf("%s not served: %s", got, why)
	}
	if p := ProfileOf(got); p.Last != got {
		t.Errorf("%s is not the last release of its profile %s", got, p.Name)
	}
}

// TestLearntLabels: the labels runs report.
func TestLearntLabels(t *testing.T) {
	for l, want := range map[Learnt]string{NotLearnt: "", Declared: "declared", Configured: "configured", Inferred: "inferred"} {
		if l.String() != want {
			t.Errorf("%d: %q, want %q", l, l.String(), want)
		}
	}
}
