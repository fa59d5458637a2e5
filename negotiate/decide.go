package negotiate

import "fmt"

// Peer is what is known of one side of the exchange for a run: what it
// declared in-band (the raw string, when the field was present) and what the
// operator configured (zero when not configured; for a consumer, that is
// auto: see ConsumerVersion).
type Peer struct {
	Declared    string
	HasDeclared bool
	Configured  Version
	// Python, when set, names the producer by its Python SDK release;
	// Configured is then that release's PyProfile.Events. Such a producer's
	// runs are always translated: its shapes match a TypeScript release's
	// but not byte for byte (retired shapes of its own, such as
	// REASONING_MESSAGE_START.role "assistant" in 0.1.11-0.1.13).
	Python PyRelease
}

// Declaration says what the relay writes into RUN_STARTED.protocolVersion.
type Declaration int

const (
	// DeclareKeep forwards the producer's own declaration (or its absence).
	DeclareKeep Declaration = iota
	// DeclareSet writes the version the relay emits.
	DeclareSet
	// DeclareOmit removes the field: the consumer predates it.
	DeclareOmit
)

// Plan is the decision for one run.
type Plan struct {
	// Consumer is the version the emitted stream is shaped for. A consumer
	// newer than the relay reads Current.
	Consumer Version
	// Producer is what the producer speaks; zero when it predates the
	// protocolVersion field and nothing was configured.
	Producer Version
	// ProducerPredatesField is set when the producer neither declared nor was
	// configured: a 0.0.x producer of unknown release.
	ProducerPredatesField bool
	// Translate is false when the run passes untouched, byte for byte.
	Translate bool
	// Declare is what happens to RUN_STARTED.protocolVersion; Declared is the
	// value written under DeclareSet.
	Declare  Declaration
	Declared string
	// Warnings are for the operator: declarations the relay could not
	// interpret, or a newer peer.
	Warnings []string
}

// Learnt says how the relay came to know a consumer's version for a run:
// every run reports it (log line, recordings, metrics).
type Learnt uint8

const (
	// NotLearnt: the run was refused before its consumer was read.
	NotLearnt Learnt = iota
	// Declared: the consumer declared RunAgentInput.protocolVersion, and
	// was taken at its word.
	Declared
	// Configured: it did not declare, and the operator named its release
	// (--consumer-version, a route's consumerVersion).
	Configured
	// Inferred: it did not declare and nothing was configured (auto): it
	// predates the field and reads as NewestBeforeField.
	Inferred
)

// String is the label of l: "declared", "configured", "inferred", or ""
// for NotLearnt.
func (l Learnt) String() string {
	switch l {
	case Declared:
		return "declared"
	case Configured:
		return "configured"
	case Inferred:
		return "inferred"
	}
	return ""
}

// NewestBeforeField is the newest release from before the protocolVersion
// field: what a consumer that does not declare its version reads as when
// nothing is configured. Of the releases such a consumer can be, it is the
// current one (0.0.59, which CopilotKit 1.75 bundles). It is the last
// legacy release of Profiles.
func NewestBeforeField() Version {
	for i := len(Profiles) - 1; i >= 0; i-- {
		if Profiles[i].Last.Legacy() {
			return Profiles[i].Last
		}
	}
	return OldestSupported
}

// ConsumerVersion decides what the consumer reads, and says how it was
// learnt: its in-band declaration (RunAgentInput.protocolVersion) is taken
// at its word; else the configured version names its release exactly (1.0
// reads an undeclared consumer as current); else, with nothing configured
// (auto), the absence is a declaration too: the consumer predates the field
// and reads as NewestBeforeField. A declaration newer than Current, or one
// that cannot be interpreted, is served as Current with a warning. It fails
// only for a consumer older than the relay serves.
func ConsumerVersion(c Peer) (v Version, how Learnt, warnings []string, err error) {
	switch {
	case c.HasDeclared:
		how = Declared
		d, perr := Parse(c.Declared)
		if perr != nil || (d.Legacy() && NewestBeforeField().Less(d)) {
			// A legacy release after the last one is no release at all.
			return Current, how, []string{fmt.Sprintf("consumer declared protocol version %q, which the relay cannot interpret: treated as newer, emitting %s", c.Declared, Current)}, nil
		}
		v = d
	case !c.Configured.IsZero():
		v, how = c.Configured, Configured
	default:
		v, how = NewestBeforeField(), Inferred
	}
	if ok, why := Supported(v); !ok {
		return v, how, nil, fmt.Errorf("consumer version %s is not served: %s", v, why)
	}
	if Current.Less(v) {
		// A newer consumer reads everything the relay emits; the spec's
		// rule is to serve it and warn.
		if how == Declared {
			warnings = []string{fmt.Sprintf("consumer declared protocol version %s, newer than the relay's %s: treated as newer, emitting %s", v, Current, Current)}
		}
		v = Current
	}
	return v, how, warnings, nil
}

// Decide decides one run from the consumer's version (see ConsumerVersion)
// and what is known of the producer: its declaration on this run's
// RUN_STARTED, else the configured version, else a producer that predates
// the field. Each run of a multi-run stream is decided on its own.
//
// The rules, from the versioning draft ("Version negotiation"):
//   - a stream the consumer reads as it is passes untranslated, and the relay
//     declares what the producer spoke (its declaration is forwarded as is);
//   - a translated stream declares what the relay emits;
//   - toward a consumer that predates the field nothing is declared;
//   - a producer declaration that cannot be interpreted is handled like a
//     newer one: proceed, warn.
func Decide(consumer Version, producer Peer) Plan {
	p := Plan{Consumer: consumer}
	producerNewer := false
	switch {
	case producer.HasDeclared:
		d, err := Parse(producer.Declared)
		if err != nil || d.Legacy() {
			// A legacy release number is not a protocol version; a producer
			// declaring one is as uninterpretable as any other odd string.
			p.Warnings = append(p.Warnings, fmt.Sprintf("producer declared protocol version %q, which the relay cannot interpret: treated as newer", producer.Declared))
			producerNewer = true
			p.Producer = Current
		} else {
			p.Producer = d
			if Current.Less(d) {
				producerNewer = true
				p.Warnings = append(p.Warnings, fmt.Sprintf("producer speaks protocol %s, newer than the relay's %s: material the relay does not know passes on", d, Current))
			}
		}
	case !producer.Configured.IsZero():
		p.Producer = producer.Configured
	default:
		p.ProducerPredatesField = true
	}

	if !consumer.Legacy() {
		// A current consumer: anything current or newer passes untouched; a
		// legacy producer's retired shapes are upgraded.
		if producerNewer || (!p.ProducerPredatesField && !p.Producer.Legacy()) {
			p.Declare = DeclareKeep
			return p
		}
		p.Translate = true
		p.Declare = DeclareSet
		p.Declared = Current.String()
		return p
	}
	// A legacy consumer predates the field.
	if !p.ProducerPredatesField && !producerNewer && p.Producer == consumer && (producer.Python.IsZero() || producer.HasDeclared) {
		p.Declare = DeclareKeep
		return p
	}
	p.Translate = true
	p.Declare = DeclareOmit
	return p
}

// InputPlan is the decision for the RunAgentInput on its way to the producer.
type InputPlan struct {
	// From is what the consumer sent; To is what the producer reads.
	From, To Version
	// Translate is false when the input is forwarded byte for byte.
	Translate bool
	// Declare is what happens to RunAgentInput.protocolVersion: DeclareKeep,
	// DeclareSet (to Declared) or DeclareOmit toward a producer that predates
	// the field.
	Declare  Declaration
	Declared string
	// Python, when set, names the producer by its Python SDK release (see
	// DecidePythonInput): To is the core its models match, and the
	// release's own input rules apply after To's.
	Python PyRelease
}

// DecideInput decides the input direction. Only the configured producer
// version is known before the producer answers; an unconfigured producer is
// treated as current.
func DecideInput(consumer Version, producerConfigured Version) InputPlan {
	to := producerConfigured
	if to.IsZero() || Current.Less(to) {
		to = Current
	}
	ip := InputPlan{From: consumer, To: to}
	switch {
	case consumer == to:
		ip.Declare = DeclareKeep
	case to.Legacy():
		ip.Translate, ip.Declare = true, DeclareOmit
	default:
		ip.Translate, ip.Declare, ip.Declared = true, DeclareSet, to.String()
	}
	return ip
}
