package negotiate

import (
	"fmt"
	"strings"
)

// Profile is a range of consumer releases that accept the same shapes, as
// measured release by release (shared reference: legacy-profiles.md §6.0).
// Within a profile a few traits still differ by release; the translation
// chain keys those on the exact version, not on the profile.
type Profile struct {
	Name        string
	First, Last Version // inclusive; Last is the newest release of the range
	Summary     string
}

// Profiles lists the profiles from oldest to newest. The first one is known
// but not served: see OldestSupported.
var Profiles = []Profile{
	{"P30", Version{0, 0, 27}, Version{0, 0, 36}, "strict serial verifier, one run per stream, no reasoning, assistant-only text messages (not served: faithful delivery would need reordering)"},
	{"P37", Version{0, 0, 37}, Version{0, 0, 40}, "THINKING_* usable, text roles developer/system/user, interleaving, several runs per stream"},
	{"P41", Version{0, 0, 41}, Version{0, 0, 44}, "+ ACTIVITY_*, activity role, user content parts (text, binary), RUN_STARTED.parentRunId/input; top-level unknown keys kept from 0.0.43"},
	{"P45", Version{0, 0, 45}, Version{0, 0, 53}, "+ REASONING_*, reasoning role, encryptedValue; name from 0.0.48, media parts from 0.0.49, empty deltas from 0.0.50"},
	{"P54", Version{0, 0, 54}, Version{0, 0, 58}, "+ RUN_FINISHED.outcome (strict success|interrupt), interrupts and resume; usage and null parentMessageId from 0.0.58"},
	{"P59", Version{0, 0, 59}, Version{0, 0, 59}, "+ SUBAGENT_*, subagentRunId, metadata (null fatal), RUN_STARTED after RUN_ERROR"},
	{"V1", Version{1, 0, 0}, Version{1, 0, 0}, "1.0: tolerant reader with strict values; THINKING_* and binary parts retired; cancelled outcome; protocolVersion"},
}

// ProfileOf returns the profile a version falls in. A published version newer
// than 1.0 reads as V1 (the newest profile the relay knows); a legacy release
// older than every profile returns the oldest.
func ProfileOf(v Version) Profile {
	for i := len(Profiles) - 1; i >= 0; i-- {
		if v.AtLeast(Profiles[i].First) {
			return Profiles[i]
		}
	}
	return Profiles[0]
}

// Supported reports whether the relay can serve a consumer of version v, and
// why not when it cannot.
func Supported(v Version) (bool, string) {
	if v.Less(OldestSupported) {
		return false, "consumers older than " + OldestSupported.String() +
			" verify strictly serially and accept one run per stream; serving them faithfully would mean reordering events, which a translation must not do"
	}
	return true, ""
}

// Known reports whether v names a release the relay knows: a TypeScript SDK
// release of one of the Profiles (served or not), or a published protocol
// version it implements. A configured version must be one (ParseKnown); an
// in-band declaration may be anything (see ConsumerVersion, Decide).
func Known(v Version) bool {
	for _, p := range Profiles {
		if v.AtLeast(p.First) && !p.Last.Less(v) {
			return true
		}
	}
	return false
}

// KnownReleases spells the releases Known accepts as ranges, oldest first:
// "0.0.27 to 0.0.59, 1.0".
func KnownReleases() string {
	var spans []string
	for i := 0; i < len(Profiles); {
		first, last := Profiles[i].First, Profiles[i].Last
		i++
		for ; i < len(Profiles) && last.Legacy() && Profiles[i].First == (Version{Patch: last.Patch + 1}); i++ {
			last = Profiles[i].Last
		}
		if first == last {
			spans = append(spans, first.String())
		} else {
			spans = append(spans, first.String()+" to "+last.String())
		}
	}
	return strings.Join(spans, ", ")
}

// ParseKnown is Parse for a configured version: one that parses but names no
// release the relay knows (2.0, 0.0.450) is an error too. The error lists the
// releases it knows, and also the other values the caller takes ("auto").
func ParseKnown(s string, also ...string) (Version, error) {
	v, err := Parse(s)
	if err == nil && Known(v) {
		return v, nil
	}
	known := strings.Join(append([]string{KnownReleases()}, also...), ", ")
	if err != nil {
		return Version{}, fmt.Errorf("%v; the relay knows %s (see agui-relay versions)", err, known)
	}
	return Version{}, fmt.Errorf("%s is not a release the relay knows (%s; see agui-relay versions)", v, known)
}
