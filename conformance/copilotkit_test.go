//go:build integration

package conformance

// CopilotKit 1.75 as its users run it, through a relay started with no
// version flags, in front of producers written on the published encoders.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ckClient is the @ag-ui/client release CopilotKit 1.75 bundles (its
// runtime and its core both pin it): what the expectation is derived for.
const ckClient = "0.0.59"

// encoderFor is the published encoder a producer of e's era writes with:
// @ag-ui/encoder 1.0.0 for a 1.0 agent, a 0.0.x one for a legacy agent
// (whose events carry what its era sent: nulls, THINKING_*, binary parts).
func encoderFor(e *Expect) string {
	if e.Era == "1.0.0" {
		return "encoder-1.0.0"
	}
	return "encoder-0.0.45"
}

// EncoderProducer is a producer process on a published encoder
// (js/producer.js).
type EncoderProducer struct {
	URL string
}

// startEncoderProducer runs js/producer.js with the encoder alias and waits
// for its address; it ends with the test.
func startEncoderProducer(t *testing.T, alias string) *EncoderProducer {
	t.Helper()
	cmd := exec.Command(nodeBin, filepath.Join("js", "producer.js"), alias)
	cmd.Dir = confDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s producer: %v", alias, err)
	}
	t.Cleanup(func() {
		stdin.Close() // the producer exits when its stdin ends
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() //nolint:errcheck
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var hello struct{ URL string }
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.URL == "" {
		t.Fatalf("the %s producer did not start: %q %v\n%s", alias, line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout) //nolint:errcheck
	return &EncoderProducer{URL: hello.URL}
}

// ProducerRequest is one request the producer received.
type ProducerRequest struct {
	URI    string  `json:"uri"`
	Accept *string `json:"accept"`
	Body   string  `json:"body"`
}

// Requests returns the requests the producer received at uri.
func (p *EncoderProducer) Requests(t *testing.T, uri string) []ProducerRequest {
	t.Helper()
	res, err := http.Get(p.URL + "/_requests")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var all []ProducerRequest
	if err := json.NewDecoder(res.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	var out []ProducerRequest
	for _, r := range all {
		if r.URI == uri {
			out = append(out, r)
		}
	}
	return out
}

// TestCopilotKit runs every producer stream through CopilotKit 1.75 as a
// CopilotKit app runs it: the published runtime (@copilotkit/runtime/v2,
// headless, its node listener) with an HttpAgent pointed at the relay, and
// @copilotkit/core's CopilotKitCore with a ProxiedCopilotRuntimeAgent in
// front of the runtime, as a browser runs it. The producers are written on
// the published @ag-ui/encoder (1.0.0 for the 1.0 streams, 0.0.45 for the
// legacy ones), and the relay in front of them is started with no version
// flag: CopilotKit does not declare protocolVersion, so the relay infers
// 0.0.59, the release CopilotKit bundles. What the browser side shows must
// be the view derived for 0.0.59, every loss named in a WARN, and the
// producer must have been asked for an event stream with the input the
// runtime sent, upgraded and declared as 1.0, forwardedProps byte for byte.
func TestCopilotKit(t *testing.T) {
	requireSetup(t)
	exps, err := loadExpectations(streamsDir)
	if err != nil {
		t.Fatal(err)
	}
	producers := map[string]*EncoderProducer{}
	relays := map[string]*Relay{}
	for _, alias := range []string{"encoder-1.0.0", "encoder-0.0.45"} {
		producers[alias] = startEncoderProducer(t, alias)
		relays[alias] = startRelay(t, producers[alias].URL) // no version flag
	}
	cases := make([]Case, len(exps))
	for i, e := range exps {
		cases[i] = streamCase(relays[encoderFor(e)].URL, e, ckClient, "copilotkit")
	}
	// The control: the same CopilotKit reads the 1.0 agent directly, with no
	// relay between, and cannot.
	controls := []string{"v1-everything", "v1-replay"}
	for _, name := range controls {
		e := expectationNamed(t, exps, name)
		cases = append(cases, streamCase(producers["encoder-1.0.0"].URL, e, ckClient, "copilotkit-direct"))
	}
	outs := runScript(t, "copilotkit.js", nil, cases)
	for i, name := range controls {
		reportVia(t, "copilotkit-1.75", name+"@encoder-1.0.0", "direct-control", checkCopilotKitFails(outs[len(exps)+i]))
	}
	outs = outs[:len(exps)]
	for i, e := range exps {
		alias := encoderFor(e)
		logs := relays[alias].Logs()
		until := time.Now().Add(time.Hour)
		if i+1 < len(outs) {
			until = time.UnixMilli(outs[i+1].StartedAt)
		}
		window := logsBetween(logs, time.UnixMilli(outs[i].StartedAt-5), until)
		reasons := checkPair(e, ckClient, outs[i], window)
		reasons = append(reasons, checkCopilotKitRun(t, producers[alias], cases[i], outs[i], window)...)
		report(t, "copilotkit-1.75", e.Name+"@"+alias, reasons)
		for _, nf := range e.NotFaithful {
			if nf.applies(parseVer(ckClient)) {
				fmt.Printf("REFUSED-IN-PART consumer=copilotkit-1.75 producer=%s@%s %s\n", e.Name, alias, nf.Why)
			}
		}
	}
}

// checkCopilotKitRun checks what the producer received for one run: one
// request, asking for an event stream, with the input the runtime's
// HttpAgent sent, declared as 1.0 (the relay translated it for a current
// producer), its ids and forwardedProps byte for byte; and that the relay's
// run line says it inferred the consumer's version.
func checkCopilotKitRun(t *testing.T, p *EncoderProducer, c Case, o Outcome, logs []LogLine) []string {
	u, _ := url.Parse(c.URL)
	reqs := p.Requests(t, u.RequestURI())
	if len(reqs) != 1 || len(o.Sent) != 1 {
		return []string{fmt.Sprintf("producer received %d requests, the runtime sent %d; want 1 each", len(reqs), len(o.Sent))}
	}
	var reasons []string
	if reqs[0].Accept == nil || *reqs[0].Accept != "text/event-stream" {
		reasons = append(reasons, fmt.Sprintf("producer asked with Accept %v, want text/event-stream", reqs[0].Accept))
	}
	got, sent := rawFields([]byte(reqs[0].Body)), rawFields([]byte(o.Sent[0]))
	if _, declared := sent["protocolVersion"]; declared {
		reasons = append(reasons, "the runtime's HttpAgent declared protocolVersion: CopilotKit 1.75 is expected not to")
	}
	if string(got["protocolVersion"]) != `"1.0"` {
		reasons = append(reasons, fmt.Sprintf("input reached the producer declared %s, want \"1.0\" (translated for it)", got["protocolVersion"]))
	}
	for _, k := range []string{"threadId", "runId", "forwardedProps"} {
		if string(got[k]) != string(sent[k]) {
			reasons = append(reasons, fmt.Sprintf("input %s forwarded as %s, the runtime sent %s", k, got[k], sent[k]))
		}
	}
	inferred := false
	for _, l := range logs {
		if strings.Contains(l.Raw, `"msg":"run"`) && strings.Contains(l.Raw, `"consumer":"0.0.59"`) && strings.Contains(l.Raw, `"consumer_learnt":"inferred"`) {
			inferred = true
		}
	}
	if !inferred {
		reasons = append(reasons, "no run line of the relay says consumer 0.0.59, inferred")
	}
	return reasons
}

func expectationNamed(t *testing.T, exps []*Expect, name string) *Expect {
	t.Helper()
	for _, e := range exps {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no expectation %s", name)
	return nil
}

// checkCopilotKitFails checks a control run, CopilotKit reading a 1.0 agent
// with no relay between: the runtime's HttpAgent (@ag-ui/client 0.0.59)
// rejects the stream with a Zod error, which the browser side is told as a
// RUN_ERROR of the runtime's own (INCOMPLETE_STREAM), instead of the run.
// What the relay is for; a control that passes says the suite no longer
// shows it.
func checkCopilotKitFails(o Outcome) []string {
	for _, re := range o.RunErrors {
		m, _ := re.(map[string]any)
		// the message is the ZodError's issues: [{"code": …, "path": […], …}]
		if msg := fmt.Sprint(m["message"]); m["code"] == "INCOMPLETE_STREAM" && strings.Contains(msg, `"code"`) && strings.Contains(msg, `"path"`) {
			return nil
		}
	}
	return []string{fmt.Sprintf("CopilotKit read a 1.0 agent directly without the runtime's Zod error (resolved %v, run errors %s): the premise of TestCopilotKit no longer holds", o.Resolved, short(o.RunErrors))}
}
