package negotiate

// Consumer is a published UI stack, known by the @ag-ui/client release it
// bundles: what it reads is that release's profile.
type Consumer struct {
	Name   string
	Client Version
}

// Consumers lists the UI stacks users run most, by the client they bundle
// (each package's dependency on @ag-ui/client, from its published
// package.json). None of them declares RunAgentInput.protocolVersion.
var Consumers = []Consumer{
	{"CopilotKit 1.75 (@copilotkit/runtime, @copilotkit/core)", Version{0, 0, 59}},
	{"CopilotKit 1.74 (@copilotkit/react-core)", Version{0, 0, 59}},
	{"CopilotKit 2 (@copilotkitnext/* 1.54)", Version{0, 0, 48}},
}

// Releases lists the releases of a profile, oldest first: every 0.0.N of a
// legacy range, or its one version.
func (p Profile) Releases() []Version {
	if !p.First.Legacy() || !p.Last.Legacy() {
		return []Version{p.Last}
	}
	var vs []Version
	for n := p.First.Patch; n <= p.Last.Patch; n++ {
		vs = append(vs, Version{0, 0, n})
	}
	return vs
}
