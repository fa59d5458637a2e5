package relay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"go.uber.org/zap/zapcore"

	"github.com/agui-relay/agui-relay/internal/testkit"
	"github.com/agui-relay/agui-relay/negotiate"
)

// newAgentStream is a run of a 1.0 producer with what a 0.0.59 consumer
// (CopilotKit 1.75) fails the whole run on: a content-part tool result, an
// event type it does not know, pendingToolCallIds on a success outcome of a
// replayed run, and a requested run that ends cancelled.
var newAgentStream = strings.Join([]string{
	`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r0","protocolVersion":"1.0"}` + "\n\n",
	`data: {"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"lookup"}` + "\n\n",
	`data: {"type":"TOOL_CALL_END","toolCallId":"c1"}` + "\n\n",
	`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r0","outcome":{"type":"success","pendingToolCallIds":["c1"]}}` + "\n\n",
	`data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0"}` + "\n\n",
	`data: {"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"lookup"}` + "\n\n",
	`data: {"type":"TOOL_CALL_END","toolCallId":"c2"}` + "\n\n",
	`data: {"type":"TOOL_CALL_RESULT","messageId":"m2","toolCallId":"c2","content":[{"type":"text","text":"21 °C"}]}` + "\n\n",
	`data: {"type":"FUTURE_EVENT","x":1}` + "\n\n",
	`data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"cancelled"}}` + "\n\n",
}, "")

// ckInput is a RunAgentInput as CopilotKit 1.75 sends it: no
// protocolVersion, tools and context always present.
const ckInput = `{"threadId":"t1","runId":"r1","state":{},"messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[],"context":[],"forwardedProps":{}}`

// TestConsumerVersionIsLearnt runs the same 1.0 stream for a consumer that
// does not declare (read as 0.0.59: inferred), one that declares 1.0, and
// undeclared ones under --consumer-version 1.0 and 0.0.54, over sockets,
// and checks what each is sent and that each run reports how its consumer
// version was learnt, in the report and the log line (the metrics and the
// recordings, which read the report, are checked in their packages).
func TestConsumerVersionIsLearnt(t *testing.T) {
	declared := strings.Replace(ckInput, `"runId":"r1",`, `"runId":"r1","protocolVersion":"1.0",`, 1)
	for _, tc := range []struct {
		name       string
		configured negotiate.Version
		input      string
		consumer   string
		learnt     string
		exact      bool // the stream passes byte for byte
	}{
		{"undeclared, auto", negotiate.Version{}, ckInput, "0.0.59", "inferred", false},
		{"declared 1.0", negotiate.Version{}, declared, "1.0", "declared", true},
		{"declared 1.0 over a configured release", negotiate.MustParse("0.0.54"), declared, "1.0", "declared", true},
		{"undeclared, configured 1.0", negotiate.Current, ckInput, "1.0", "configured", true},
		{"undeclared, configured 0.0.54", negotiate.MustParse("0.0.54"), ckInput, "0.0.54", "configured", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(w http.ResponseWriter, r *http.Request) {
				testkit.StreamHeaders(w)
				testkit.SSE(w, newAgentStream)
			}, func(r *Relay) { r.ConsumerVersion = tc.configured })
			got := testkit.ReadAll(t, h.post("/agent", tc.input))
			rep := h.report()
			if rep.Consumer.String() != tc.consumer || rep.ConsumerLearnt.String() != tc.learnt {
				t.Errorf("report: consumer %s learnt %q, want %s %s", rep.Consumer, rep.ConsumerLearnt, tc.consumer, tc.learnt)
			}
			if tc.exact != (got == newAgentStream) {
				t.Errorf("byte for byte: %v, want %v:\n%s", got == newAgentStream, tc.exact, got)
			}
			if !tc.exact {
				// Downgraded for a release before the field: nothing
				// declared, nothing it would fail the run on, the
				// cancelled run refused as the RUN_ERROR documented for it.
				for _, gone := range []string{"protocolVersion", "pendingToolCallIds", "FUTURE_EVENT", `"content":[`, `{"type":"cancelled"}`} {
					if strings.Contains(got, gone) {
						t.Errorf("%s reached the consumer:\n%s", gone, got)
					}
				}
				for _, want := range []string{`"runId":"r0"}`, `"content":"21 °C"`, `{"type":"RUN_ERROR","message":"agui-relay: the run was cancelled`, `"code":"cancelled"`} {
					if !strings.Contains(got, want) {
						t.Errorf("%s missing:\n%s", want, got)
					}
				}
			}
			line := h.logs.FilterMessage("run").All()
			if len(line) != 1 || line[0].ContextMap()["consumer_learnt"] != tc.learnt || line[0].ContextMap()["consumer"] != tc.consumer {
				t.Errorf("run log line %+v", line)
			}
		})
	}
}

// TestUndeclaredConsumerInputIsUpgraded: the retired input shapes of a
// consumer that does not declare (legacy binary parts, nulls for absent
// members) reach a producer that is not configured (so current) upgraded,
// declared as what the relay emits; forwardedProps, nulls inside it
// included, arrives byte for byte, and the lossy step warns.
func TestUndeclaredConsumerInputIsUpgraded(t *testing.T) {
	got := make(chan string, 1)
	h := newHarness(t, bodiesTo(got), nil)
	const props = `{"n":null,"k":[1,"\u00e9",null] }`
	in := `{"threadId":"t1","runId":"r1","state":null,"messages":[{"id":"u1","role":"user","content":[` +
		`{"type":"binary","mimeType":"image/png","url":"https://example.test/a.png"},` +
		`{"type":"binary","mimeType":"audio/wav","data":"AAAA","filename":"a.wav"},` +
		`{"type":"binary","mimeType":"application/pdf","id":"upload-1"}]}],` +
		`"tools":[{"name":"t","description":"d","parameters":null}],"context":[],"forwardedProps":` + props + `}`
	resp := h.post("/agent", in)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, testkit.ReadAll(t, resp))
	}
	testkit.ReadAll(t, resp)
	b := <-got
	if rep := h.report(); rep.ConsumerLearnt != negotiate.Inferred {
		t.Errorf("learnt %q", rep.ConsumerLearnt)
	}
	if !strings.Contains(b, `"forwardedProps":`+props) {
		t.Errorf("forwardedProps altered: %s", b)
	}
	var doc struct {
		ProtocolVersion string `json:"protocolVersion"`
		Messages        []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatalf("producer got %s: %v", b, err)
	}
	if doc.ProtocolVersion != "1.0" {
		t.Errorf("declared %q, want the 1.0 the relay emits", doc.ProtocolVersion)
	}
	outside, _, _ := strings.Cut(b, `"forwardedProps"`)
	if strings.Contains(outside, "null") || strings.Contains(b, `"binary"`) && !strings.Contains(b, `"id":"upload-1"`) {
		t.Errorf("nulls or binary parts left: %s", b)
	}
	parts := doc.Messages[0].Content
	if len(parts) < 2 {
		t.Fatalf("parts %v", parts)
	}
	img, _ := json.Marshal(parts[0])
	audio, _ := json.Marshal(parts[1])
	if string(img) != `{"source":{"mimeType":"image/png","type":"url","value":"https://example.test/a.png"},"type":"image"}` {
		t.Errorf("url binary part became %s", img)
	}
	if string(audio) != `{"metadata":{"filename":"a.wav"},"source":{"mimeType":"audio/wav","type":"data","value":"AAAA"},"type":"audio"}` {
		t.Errorf("data binary part became %s", audio)
	}
	if w := h.logs.FilterLevelExact(zapcore.WarnLevel).All(); len(w) == 0 || !strings.Contains(fmt.Sprint(w), "binary") {
		t.Errorf("the id-only binary part was lost without a warning; logs %v", h.logs.All())
	}
}

// TestUndeclaredMinimalInputIsServed: an undeclared consumer is read as
// 0.0.59, but the guess refuses nothing the current protocol accepts: an
// input without tools and context (a hand-written client's) reaches the
// producer, told "1.0", and its stream is shaped for 0.0.59.
func TestUndeclaredMinimalInputIsServed(t *testing.T) {
	contacted := make(chan string, 1)
	h := newHarness(t, bodiesTo(contacted), nil)
	resp := h.post("/agent", `{"threadId":"t1","runId":"r1","messages":[]}`)
	testkit.ReadAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	select {
	case b := <-contacted:
		if pv := gjson.Get(b, "protocolVersion").String(); pv != "1.0" {
			t.Errorf("the producer was told %q, want 1.0: %s", pv, b)
		}
	default:
		t.Fatal("the producer was not contacted")
	}
}

// TestUndeclaredMalformedInputIsJudgedAs0059: an undeclared input that the
// current protocol refuses too is refused with every finding of 0.0.59's
// rules, and the problem says why it was judged so.
func TestUndeclaredMalformedInputIsJudgedAs0059(t *testing.T) {
	contacted := make(chan string, 1)
	h := newHarness(t, bodiesTo(contacted), nil)
	resp := h.post("/agent", `{"threadId":"t1","runId":"r1","messages":[{"id":"u","role":"user","content":5}]}`)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	p := problemOf(t, resp)
	if !strings.Contains(p.Detail, "judged as 0.0.59") || !strings.Contains(p.Detail, "does not declare") || len(p.Errors) != 3 {
		t.Errorf("problem %+v", p)
	}
	select {
	case b := <-contacted:
		t.Errorf("the producer was contacted: %s", b)
	default:
	}
}
