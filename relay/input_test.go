package relay

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/rules"
)

// readInput's reasons at the nesting cap and for bytes that are not JSON
// anywhere in the body; invalid UTF-8 inside a string is the judge's and
// the producer's to read, as gjson.ValidBytes let it through.
func TestReadInputReasons(t *testing.T) {
	deep := func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }
	tooDeep := "nested deeper than " + strconv.Itoa(rules.MaxNesting) + " levels"
	for _, tc := range []struct{ name, body, reason string }{
		{"as deep as allowed", `{"a":` + deep(rules.MaxNesting-1) + `}`, ""},
		{"one level deeper", `{"a":` + deep(rules.MaxNesting) + `}`, tooDeep},
		{"too deep and broken", `{"a":` + strings.Repeat("[", rules.MaxNesting) + `,}`, tooDeep},
		{"deep brackets in a string", `{"a":"` + strings.Repeat("[", 2*rules.MaxNesting) + `"}`, ""},
		{"invalid UTF-8 in a string", "{\"runId\":\"\xff\xfe\",\"threadId\":\"\xed\xa0\x80\"}", ""},
		{"a byte after the object", `{"runId":"r"} x`, "not valid JSON"},
		{"a control byte in a string", "{\"runId\":\"r\x01\"}", "not valid JSON"},
		{"a bad escape deep down", `{"a":[[[{"b":"\x"}]]]}`, "not valid JSON"},
		{"a trailing comma past 64 levels", `{"a":` + strings.Repeat("[", 70) + "1," + strings.Repeat("]", 70) + `}`, "not valid JSON"},
		{"a vertical tab before the object", "\v{}", "not valid JSON"},
	} {
		_, errs := readInput([]byte(tc.body))
		got := ""
		if len(errs) > 0 {
			if len(errs) != 1 || errs[0].Pointer != "" {
				t.Errorf("%s: %+v", tc.name, errs)
			}
			got = errs[0].Reason
		}
		if got != tc.reason {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.reason)
		}
	}
}

// memberString says what gjson's Result.String said of the member (the
// run's report took its ids from gjson.GetBytes), in a copy of its own.
func TestMemberString(t *testing.T) {
	for raw, want := range map[string]string{
		`"r1"`: "r1", `"r\u0031"`: "r1", `"a\"b"`: `a"b`, `""`: "", `12`: "12", `-3`: "-3", `1.50`: "1.5",
		`1e2`: "100", `true`: "true", `false`: "false", `null`: "", `{"a":1}`: `{"a":1}`, `[1]`: `[1]`, ``: "",
	} {
		buf := []byte(raw)
		got := memberString(unsafe.String(unsafe.SliceData(buf), len(buf)))
		for i := range buf {
			buf[i] = 'x' // the server's buffer, reused
		}
		if got != want {
			t.Errorf("memberString(%s) = %q, want %q", raw, got, want)
		}
	}
}

// admit takes the members from where the reading found them: past the
// members it keeps, after a member named twice, after deep nesting; a
// protocolVersion named twice is refused with its pointer.
func TestAdmitReadsTheMembers(t *testing.T) {
	many := ""
	for i := range 20 {
		many += `"x` + strconv.Itoa(i) + `":` + strconv.Itoa(i) + `,`
	}
	deep := `"state":{"a":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `},`
	base := `"messages":[],"tools":[],"context":[]`
	for _, tc := range []struct {
		name, body, run string
		consumer        negotiate.Version
		reason          string
	}{
		{"past the members kept", `{` + many + `"runId":"r","threadId":"t","protocolVersion":"0.0.45",` + base + `}`, "r", negotiate.MustParse("0.0.45"), ""},
		{"after a member named twice", `{"x":1,"x":2,"threadId":"t","runId":"r2","protocolVersion":"1.0",` + base + `}`, "r2", negotiate.Current, ""},
		{"after deep nesting", `{` + deep + `"threadId":"t","runId":"r3","protocolVersion":"1.0",` + base + `}`, "r3", negotiate.Current, ""},
		{"an escaped key", `{"threadId":"t","run\u0049d":"r4","protocol\u0056ersion":"0.0.45",` + base + `}`, "r4", negotiate.MustParse("0.0.45"), ""},
		{"protocolVersion twice", `{"threadId":"t","runId":"r5","protocolVersion":"1.0","protocolVersion":"0.0.45",` + base + `}`, "r5", negotiate.Current,
			"duplicate-key (RunAgentInput.protocolVersion)"},
	} {
		r := &Relay{Upstream: "http://127.0.0.1:1", ProducerVersion: negotiate.Current}
		r.once.Do(r.init)
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetBodyString(tc.body)
		rep := RunReport{}
		_, _, ok := r.admit(&ctx, &rep)
		if rep.RunID != tc.run || rep.ThreadID != "t" {
			t.Errorf("%s: run %q, thread %q", tc.name, rep.RunID, rep.ThreadID)
		}
		if tc.reason == "" {
			if !ok || rep.Consumer != tc.consumer || rep.ConsumerLearnt != negotiate.Declared {
				t.Errorf("%s: admitted %v, consumer %s (%v): %s", tc.name, ok, rep.Consumer, rep.ConsumerLearnt, ctx.Response.Body())
			}
			continue
		}
		var p Problem
		if ok || ctx.Response.StatusCode() != fasthttp.StatusBadRequest || json.Unmarshal(ctx.Response.Body(), &p) != nil ||
			len(p.Errors) != 1 || p.Errors[0] != (InputError{"/protocolVersion", tc.reason}) {
			t.Errorf("%s: admitted %v, %d %s", tc.name, ok, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
