//go:build integration

package conformance

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
)

// producerProfiles are the producer releases the input direction is checked
// against: the relay is started with --producer-version and what it forwards
// must pass that release's own @ag-ui/core RunAgentInputSchema.
var producerProfiles = []struct{ core, flag string }{
	{"0.0.39", "0.0.39"}, {"0.0.45", "0.0.45"}, {"0.0.49", "0.0.49"},
	{"0.0.54", "0.0.54"}, {"0.0.59", "0.0.59"}, {"1.0.0", "1.0"},
}

// richMessages is a 1.0 consumer's history using every message role and
// content shape the input can carry.
var richMessages = []any{
	map[string]any{"id": "sys-1", "role": "system", "content": "You are a travel agent."},
	map[string]any{"id": "dev-1", "role": "developer", "content": "Prefer trains."},
	map[string]any{"id": "u-1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "Here is my ticket "},
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}, "metadata": map[string]any{"filename": "ticket.png"}},
		map[string]any{"type": "document", "source": map[string]any{"type": "file", "value": "file-xyz", "provider": "openai"}},
		map[string]any{"type": "text", "text": "and my passport."},
	}},
	map[string]any{"id": "r-0", "role": "reasoning", "content": "They have a ticket already.", "encryptedValue": "enc-r0"},
	map[string]any{"id": "a-0", "role": "assistant", "content": "Checking it.", "name": "planner", "toolCalls": []any{
		map[string]any{"id": "tc-0", "type": "function", "function": map[string]any{"name": "lookup_ticket", "arguments": `{"t":1}`}, "encryptedValue": "enc-tc0"},
	}},
	map[string]any{"id": "t-0", "role": "tool", "toolCallId": "tc-0", "content": []any{
		map[string]any{"type": "text", "text": "valid "},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "https://example.com/seat.png", "mimeType": "image/png"}},
		map[string]any{"type": "text", "text": "ticket"},
	}},
	map[string]any{"id": "act-0", "role": "activity", "activityType": "progress", "content": map[string]any{"p": 1}},
	map[string]any{"id": "u-2", "role": "user", "content": "Thanks, go ahead."},
}

var richTools = []any{map[string]any{"name": "lookup_ticket", "description": "Looks a ticket up",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"t": map[string]any{"type": "number"}}},
	"metadata":   map[string]any{"owner": "travel"}}}

var richResume = []any{map[string]any{"interruptId": "int-0", "status": "resolved", "payload": map[string]any{"approved": true}}}

// inputLosses are what a producer release cannot receive of richMessages /
// richResume: the relay must name each in a WARN (direction input).
var inputLosses = []Loss{
	{Below: "1.0.0", Shape: "file", Why: "the document part with a file source"},
	{Below: "1.0.0", Shape: "tool", Why: "the image part of tool message t-0"},
	{Below: "0.0.54", Shape: "resume", Why: "the resume entry for int-0"},
	{Below: "0.0.45", Shape: "reasoning", Why: "reasoning message r-0"},
	{Below: "0.0.40", Shape: "image", Why: "the image part of user message u-1"},
}

// legacyMessages is a 0.0.45 consumer's history with legacy binary parts
// (data with a filename, a url, an id-only upload handle).
var legacyMessages = []any{
	map[string]any{"id": "u-1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "Compare these"},
		map[string]any{"type": "binary", "mimeType": "image/jpeg", "data": "/9j/4AAQ", "filename": "a.jpg"},
		map[string]any{"type": "binary", "mimeType": "application/pdf", "url": "https://example.com/b.pdf"},
		map[string]any{"type": "binary", "mimeType": "audio/wav", "id": "upload-9"},
	}},
	map[string]any{"id": "r-1", "role": "reasoning", "content": "Two files and a recording."},
}

type inputCase struct {
	client, core, flag string // consumer release, producer core, --producer-version ("": none)
	consumerFlag       string // --consumer-version, for legacy consumers
	messages, resume   []any
	losses             []Loss
}

var inputCases = func() []inputCase {
	var cs []inputCase
	for _, pp := range producerProfiles {
		cs = append(cs, inputCase{client: "1.0.0", core: pp.core, flag: pp.flag,
			messages: richMessages, resume: richResume, losses: inputLosses})
	}
	// a legacy consumer's binary parts reach a 1.0 producer as media parts;
	// the id-only one has no 1.0 form
	cs = append(cs, inputCase{client: "0.0.45", consumerFlag: "0.0.45", core: "1.0.0", flag: "1.0",
		messages: legacyMessages,
		losses:   []Loss{{Below: "99.0.0", Shape: "binary", Why: "the id-only binary part upload-9"}}})
	// the same from the release CopilotKit 1.75 bundles, through a relay
	// with no version flag at all: undeclared, it is read as 0.0.59, and its
	// input is upgraded for the producer, which is not configured either
	cs = append(cs, inputCase{client: "0.0.59", core: "1.0.0",
		messages: legacyMessages,
		losses:   []Loss{{Below: "99.0.0", Shape: "binary", Why: "the id-only binary part upload-9"}}})
	return cs
}()

// TestInput checks the input direction: a consumer's RunAgentInput,
// forwarded by the relay to a producer of each profile, is accepted by that
// release's RunAgentInputSchema and carries what the consumer sent.
func TestInput(t *testing.T) {
	requireSetup(t)
	producer := startProducer(t)
	for _, ic := range inputCases {
		name := fmt.Sprintf("consumer=%s,producer=%s", ic.client, ic.core)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if ic.flag != "" {
				flags = append(flags, "--producer-version", ic.flag)
			}
			if ic.consumerFlag != "" {
				flags = append(flags, "--consumer-version", ic.consumerFlag)
			}
			relay := startRelay(t, producer.URL, flags...)
			params := map[string]any{"runId": "run-in", "tools": richTools, "context": runContext,
				"forwardedProps": forwardedProps}
			if ic.resume != nil {
				params["resume"] = ic.resume
			}
			c := Case{
				Name: "input",
				URL:  relay.URL + "/s/input-ack?input=" + url.QueryEscape(name),
				Agent: map[string]any{"threadId": "thread-in", "initialMessages": ic.messages,
					"initialState": map[string]any{"cart": []any{"ticket"}, "step": 2}},
				Params: params,
			}
			out := runClient(t, ic.client, []Case{c})[0]
			reasons := checkInput(t, producer, ic, c, out, relay.Logs())
			reportVia(t, ic.client, "input@"+ic.core, "relay", reasons)
		})
	}
}

func checkInput(t *testing.T, p *Producer, ic inputCase, c Case, o Outcome, logs []LogLine) []string {
	core := ic.core
	if !o.Resolved {
		return []string{"run rejected: " + firstLine(o.Error) + relayErrors(logs)}
	}
	reasons := checkForwarded(p, c, o)
	if len(reasons) > 0 {
		return reasons
	}
	u, _ := url.Parse(c.URL)
	var fwd map[string]any
	if err := json.Unmarshal(p.Bodies(u.RequestURI())[0], &fwd); err != nil {
		return []string{"forwarded body is not JSON: " + err.Error()}
	}
	var sent map[string]any
	_ = json.Unmarshal([]byte(o.Sent[0]), &sent)
	res := validate(t, []ValidateJob{{Name: "in", Core: core, Kind: "input", Docs: []any{fwd}}})["in"]
	if len(res.Results) != 1 || !res.Results[0].OK {
		return []string{fmt.Sprintf("forwarded input rejected by @ag-ui/core %s RunAgentInputSchema: %s", core, short(res.Results))}
	}
	parsed := res.Results[0].Parsed
	v := parseVer(core)
	// what the producer must see: the consumer's messages as that release can
	// represent them (the same derivation rules as the event direction; a
	// message's own name is not the 0.0.48 TEXT_MESSAGE_START.name)
	var want []any
	for _, m := range sent["messages"].([]any) {
		if d := deriveMessage(m.(map[string]any), v, false); d != nil && !idOnlyBinaryDropped(d, v) {
			want = append(want, d)
		}
	}
	if d := match(want, parsed["messages"]); d != "" {
		reasons = append(reasons, "messages"+d)
	}
	for _, k := range []string{"state", "context"} {
		if d := match(sent[k], parsed[k]); d != "" {
			reasons = append(reasons, k+d)
		}
	}
	wantTools := deepCopy(sent["tools"]).([]any)
	if v.Less(parseVer("0.0.52")) {
		for _, tl := range wantTools {
			delete(tl.(map[string]any), "metadata") // Tool.metadata from 0.0.52
		}
	}
	if d := match(wantTools, parsed["tools"]); d != "" {
		reasons = append(reasons, "tools"+d)
	}
	if v.Less(v0054) {
		if _, ok := parsed["resume"]; ok {
			reasons = append(reasons, "resume reached a producer that predates it")
		}
	} else if d := match(sent["resume"], parsed["resume"]); d != "" {
		reasons = append(reasons, "resume"+d)
	}
	for _, l := range ic.losses {
		if l.applies(v) && !warned(logs, l.Shape) {
			reasons = append(reasons, fmt.Sprintf("relay lost %s without a WARN naming %q", l.Why, l.Shape))
		}
	}
	return reasons
}

// idOnlyBinaryDropped removes, for a 1.0 producer, the binary parts that
// carry only an upload id (no 1.0 form); it reports whether the whole
// message is gone (never: the message stays with its other parts).
func idOnlyBinaryDropped(m map[string]any, v Ver) bool {
	parts, ok := m["content"].([]any)
	if !ok || v.Less(v1) {
		return false
	}
	var keep []any
	for _, p := range parts {
		pm := p.(map[string]any)
		if pm["type"] == "binary" && pm["data"] == nil && pm["url"] == nil {
			continue
		}
		keep = append(keep, p)
	}
	m["content"] = keep
	return false
}
