//go:build integration

package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// forwardedProps the consumers send: compact JSON as JSON.stringify writes
// it, with what a re-encoding intermediary would change (HTML characters that
// Go escapes, U+2028, an exponent, key order, a null, empty containers).
var forwardedProps = map[string]any{
	"z": 1, "a": []any{1.5, "x"}, "html": "<b>&</b>", "u": "é ☃ \u2028 \"q\"",
	"nested": map[string]any{"n": nil, "e": map[string]any{}, "arr": []any{}}, "big": 1e21,
}

var runTools = []any{map[string]any{"name": "get_weather", "description": "Current weather for a city",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}

var runContext = []any{map[string]any{"description": "traveller", "value": "Ana, vegetarian"}}

// notServed lists the consumer releases the relay cannot serve faithfully,
// with the reason (also in README.md). They are printed as NOT-SERVED lines
// for every producer, and TestNotServed checks that the relay refuses them
// clearly rather than sending a stream they would misread.
var notServed = []struct{ consumer, why string }{
	{"0.0.36", "P30 (0.0.27-0.0.36): strict serial verifier (one open message or tool call at a time, one run per stream) and assistant-only text roles; faithful delivery would need reordering or inventing events, which a translation must not do"},
}

// inferredConsumer is the release the relay reads a consumer that does not
// declare protocolVersion as, with no flag (--consumer-version auto): the
// newest from before the field, the one CopilotKit 1.75 bundles. Its pairs
// run with no version flag.
const inferredConsumer = "0.0.59"

// TestMatrix drives every consumer release through the relay against every
// producer stream and compares what the consumer shows with the expectation
// derived for that release.
func TestMatrix(t *testing.T) {
	requireSetup(t)
	exps, err := loadExpectations(streamsDir)
	if err != nil {
		t.Fatal(err)
	}
	producer := startProducer(t)
	for _, c := range Consumers {
		t.Run("consumer="+c, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if c != "1.0.0" && c != inferredConsumer {
				// legacy consumers never declare protocolVersion: the relay
				// reads them as 0.0.59 unless it is configured for them
				flags = []string{"--consumer-version", c}
			}
			relay := startRelay(t, producer.URL, flags...)
			cases := make([]Case, len(exps))
			for i, e := range exps {
				cases[i] = streamCase(relay.URL, e, c, c)
			}
			outs := runClient(t, c, cases)
			logs := relay.Logs()
			for i, e := range exps {
				until := time.Now().Add(time.Hour)
				if i+1 < len(outs) {
					until = time.UnixMilli(outs[i+1].StartedAt)
				}
				window := logsBetween(logs, time.UnixMilli(outs[i].StartedAt-5), until)
				reasons := checkPair(e, c, outs[i], window)
				reasons = append(reasons, checkForwarded(producer, cases[i], outs[i])...)
				report(t, c, e.Name, reasons)
				for _, nf := range e.NotFaithful {
					if nf.applies(parseVer(c)) {
						fmt.Printf("REFUSED-IN-PART consumer=%s producer=%s %s\n", c, e.Name, nf.Why)
					}
				}
			}
		})
	}
}

// streamCase is the runAgent call for stream e by a consumer release, at
// base (the relay or the producer); tag keeps its producer-side URL unique.
func streamCase(base string, e *Expect, consumer, tag string) Case {
	return Case{
		Name: e.Name,
		URL:  base + "/s/" + e.Name + "?consumer=" + url.QueryEscape(tag),
		Agent: map[string]any{
			"threadId":        e.Input.ThreadID,
			"initialMessages": e.Input.Messages,
		},
		Params: map[string]any{
			"runId": e.Input.RunID, "tools": runTools, "context": runContext,
			"forwardedProps": forwardedProps,
		},
		CaptureRaw: consumer == "1.0.0",
		Validate:   map[bool]string{true: "1.0.0"}[consumer == "1.0.0"],
	}
}

func logsBetween(logs []LogLine, from, until time.Time) []LogLine {
	var out []LogLine
	for _, l := range logs {
		if l.At.IsZero() || (!l.At.Before(from) && l.At.Before(until)) {
			out = append(out, l)
		}
	}
	return out
}

// checkPair compares one consumer's outcome with the derived expectation.
func checkPair(e *Expect, consumer string, o Outcome, logs []LogLine) []string {
	v := parseVer(consumer)
	var reasons []string
	if !o.Resolved {
		return []string{"run rejected: " + firstLine(o.Error) + relayErrors(logs)}
	}
	x := e.derive(v)
	if d := match(x.Messages, o.Messages); d != "" {
		reasons = append(reasons, "messages"+d)
	}
	if d := match(x.State, o.State); d != "" {
		reasons = append(reasons, "state"+d)
	}
	if d := match(x.Result, o.Result); d != "" {
		reasons = append(reasons, "result"+d)
	}
	runErrors := o.RunErrors
	if runErrors == nil {
		runErrors = []any{}
	}
	if d := match(x.RunErrors, runErrors); d != "" {
		reasons = append(reasons, "runErrors"+d)
	}
	if x.PendingInterrupts != nil {
		if o.PendingInterrupts == nil {
			reasons = append(reasons, "pendingInterrupts: missing on the agent")
		} else if d := match(x.PendingInterrupts, *o.PendingInterrupts); d != "" {
			reasons = append(reasons, "pendingInterrupts"+d)
		}
	}
	if consumer == "1.0.0" {
		for _, w := range o.Warnings {
			if strings.Contains(w.Text, "[ag-ui]") {
				reasons = append(reasons, "1.0 consumer warned: "+firstLine(w.Text))
			}
		}
		if len(o.Raw) == 0 {
			reasons = append(reasons, "no events captured from the relay")
		}
		for _, inv := range o.RawInvalid {
			reasons = append(reasons, "event invalid for @ag-ui/core 1.0.0: "+short(inv))
		}
	}
	for _, l := range e.Losses {
		if !l.applies(v) {
			continue
		}
		if !warned(logs, l.Shape) {
			reasons = append(reasons, fmt.Sprintf("relay lost %s without a WARN naming %q", l.Why, l.Shape))
		}
	}
	return reasons
}

func warned(logs []LogLine, shape string) bool {
	for _, l := range logs {
		if strings.EqualFold(l.Level, "warn") && strings.Contains(l.Raw, shape) {
			return true
		}
	}
	return false
}

func relayErrors(logs []LogLine) string {
	var b strings.Builder
	for _, l := range logs {
		if strings.EqualFold(l.Level, "error") || strings.EqualFold(l.Level, "warn") {
			b.WriteString(" | relay: " + firstLine(l.Raw))
		}
	}
	return b.String()
}

// checkForwarded checks the input the producer received for this case: one
// request, the consumer's ids, and forwardedProps byte for byte as sent.
func checkForwarded(p *Producer, c Case, o Outcome) []string {
	u, _ := url.Parse(c.URL)
	bodies := p.Bodies(u.RequestURI())
	if len(bodies) != 1 {
		return []string{fmt.Sprintf("producer received %d requests, want 1", len(bodies))}
	}
	if len(o.Sent) != 1 {
		return []string{fmt.Sprintf("consumer sent %d requests, want 1", len(o.Sent))}
	}
	got, sent := rawFields(bodies[0]), rawFields([]byte(o.Sent[0]))
	var reasons []string
	for _, k := range []string{"threadId", "runId", "forwardedProps"} {
		if !bytes.Equal(got[k], sent[k]) {
			reasons = append(reasons, fmt.Sprintf("input %s forwarded as %s, consumer sent %s", k, got[k], sent[k]))
		}
	}
	return reasons
}

func rawFields(b []byte) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(b, &m)
	return m
}

func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// TestNotServed checks that the relay refuses the consumers it cannot serve
// faithfully, clearly and before contacting the producer: either serve
// refuses the configuration at start-up, or each run is answered with an
// RFC 9457 problem that says the consumer is not served. Each such consumer
// is listed with the reason for every producer stream.
func TestNotServed(t *testing.T) {
	requireSetup(t)
	exps, err := loadExpectations(streamsDir)
	if err != nil {
		t.Fatal(err)
	}
	producer := startProducer(t)
	for _, ns := range notServed {
		relay, exitMsg := tryStartRelay(t, producer.URL, "--consumer-version", ns.consumer)
		var reasons []string
		switch {
		case relay == nil:
			if !strings.Contains(exitMsg, ns.consumer) {
				reasons = append(reasons, "serve refused the configuration without naming the release: "+firstLine(exitMsg))
			}
		default:
			body := `{"threadId":"t","runId":"r","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}`
			res, err := http.Post(relay.URL+"/s/v1-run-error?consumer=not-served", "application/json", strings.NewReader(body))
			if err != nil {
				reasons = append(reasons, "run failed to connect: "+err.Error())
				break
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode < 400 || !strings.Contains(res.Header.Get("Content-Type"), "problem+json") ||
				!strings.Contains(string(b), "not served") {
				reasons = append(reasons, fmt.Sprintf("a run for a not-served consumer got %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), firstLine(string(b))))
			}
			if n := len(producer.Bodies("/s/v1-run-error?consumer=not-served")); n != 0 {
				reasons = append(reasons, "the producer was contacted for a consumer that is not served")
			}
		}
		reportVia(t, ns.consumer, "refusal", "relay", reasons)
		for _, e := range exps {
			reportNotServed(ns.consumer, e.Name, ns.why)
		}
	}
}
