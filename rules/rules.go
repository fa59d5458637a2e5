// Package rules knows what each protocol version's shapes are and judges an
// event or a RunAgentInput against a version at byte level: accepted, a
// retired shape, unrecognised material or malformed, each finding located by
// JSON pointer.
package rules

// Verdict is the outcome of judging one document or one finding. Verdicts
// are ordered by severity: a document's verdict is its worst finding's.
type Verdict int

const (
	// Accepted: the version reads it as it is.
	Accepted Verdict = iota
	// Retired: a shape the protocol once described and no longer does; it is
	// to be translated into its replacement (see the deprecation registry).
	Retired
	// Unrecognised: material the version does not know (an event type, a
	// property, a union member). A tolerant reader strips it; some legacy
	// readers fail the run on it (Finding.Fatal).
	Unrecognised
	// Malformed: a known field carries a value the version rejects.
	Malformed
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Retired:
		return "retired"
	case Unrecognised:
		return "unrecognised"
	default:
		return "malformed"
	}
}

// Finding is one located observation about a document.
type Finding struct {
	Verdict Verdict
	// Pointer locates the material (RFC 6901), "" for the whole document.
	Pointer string
	// Rule names what was violated or recognised, e.g. "required",
	// "type:string", "enum:a|b", "literal:tool", "null-not-allowed",
	// "safe-integer", "json-pointer", "min-items:1", "duplicate-key",
	// "unknown-event-type", "unknown-property", "unknown-role",
	// "unknown-part-type", "unknown-outcome-type", "unknown-op", "retired"
	// (then Shape is the deprecation registry's key).
	Rule string
	// Shape names the shape in the contract's terms
	// ("THINKING_START.title", "TEXT_MESSAGE_START.name", "SUBAGENT_STARTED").
	Shape string
	// Fatal reports that a consumer of the judged version fails the whole run
	// on this finding (always true for Malformed; for Unrecognised it depends
	// on the version: 1.0 strips, most 0.0.x releases reject).
	Fatal bool
}

// Judgement is the verdict on one document with its findings.
type Judgement struct {
	Verdict  Verdict
	Findings []Finding
}
