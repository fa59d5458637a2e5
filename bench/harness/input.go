package harness

import "github.com/agui-relay/agui-relay/internal/synth"

// Input is the RunAgentInput the bench posts (the load generator gives each
// run a threadId and runId of its own). It declares no protocolVersion: the
// bench's consumer is one that predates the field, and the relay is told
// what it reads (--consumer-version: 1.0, or the case's release).
func Input(runID string) []byte {
	return []byte(`{"threadId":"thread-` + runID + `","runId":"` + runID + `","state":{},"messages":[{"id":"u1","role":"user","content":"Summarise the design notes."}],"tools":[],"context":[],"forwardedProps":{}}`)
}

// InputParams is Input carrying a run's parameters (a synth query string)
// in forwardedProps, for a proxy that posts every run to one URL.
func InputParams(runID, query string) []byte {
	return []byte(`{"threadId":"thread-` + runID + `","runId":"` + runID + `","state":{},"messages":[{"id":"u1","role":"user","content":"Summarise the design notes."}],"tools":[],"context":[],"forwardedProps":{"` + synth.BodyParamsKey + `":"` + query + `"}}`)
}
