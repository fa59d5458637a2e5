//go:build integration

package conformance

// The expectation model. Each producer stream testdata/streams/<name>.sse has
// a hand-written <name>.expect.json holding what a consumer shows for it: the
// 1.0 view (messages, state, result, pending interrupts), optional views for
// older consumers where the producer's own era reads differently (legacy
// binary parts, for instance), and the losses the relay must name in a
// warning. What an older consumer shows is DERIVED from the view by the rules
// in derive, one rule per change in the protocol, each checked against the
// published client of that release (README.md, "derivation rules").

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Ver is a client/core release, "0.0.45" or "1.0.0".
type Ver [3]int

func parseVer(s string) Ver {
	var v Ver
	if _, err := fmt.Sscanf(s, "%d.%d.%d", &v[0], &v[1], &v[2]); err != nil {
		panic(fmt.Sprintf("bad version %q", s))
	}
	return v
}

func (v Ver) Less(o Ver) bool {
	for i := range v {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}

func (v Ver) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// View is what a consumer shows after runAgent: its messages, state, the
// result runAgent returned and the pending interrupts (0.0.54+).
type View struct {
	From              string            `json:"from"`
	Why               string            `json:"why,omitempty"`
	Messages          []json.RawMessage `json:"messages,omitempty"`
	State             json.RawMessage   `json:"state,omitempty"`
	Result            json.RawMessage   `json:"result,omitempty"`
	PendingInterrupts json.RawMessage   `json:"pendingInterrupts,omitempty"`
	// RunErrors are the RUN_ERROR events the consumer is told of ({message,
	// code}; "*" for any text). Absent means none.
	RunErrors json.RawMessage `json:"runErrors,omitempty"`
}

// Loss is content a consumer in [From, Below) cannot represent: the relay
// must log a WARN naming Shape for that pair.
type Loss struct {
	Below string `json:"below"`
	From  string `json:"from,omitempty"`
	Shape string `json:"shape"`
	Why   string `json:"why"`
}

func (l Loss) applies(v Ver) bool {
	if l.From != "" && v.Less(parseVer(l.From)) {
		return false
	}
	return v.Less(parseVer(l.Below))
}

// Expect is one stream's expectation file.
type Expect struct {
	Name           string
	Description    string `json:"description"`
	Era            string `json:"era"`
	DirectRejected bool   `json:"directRejected"`
	// DirectConsumers are releases of the producer's own era that read the
	// stream as it is: run directly (no relay) they must show the derived
	// view, which checks the expectation and the derivation rules against
	// the real clients before the relay is involved.
	DirectConsumers []string `json:"directConsumers"`
	Input           struct {
		ThreadID string            `json:"threadId"`
		RunID    string            `json:"runId"`
		Messages []json.RawMessage `json:"messages"`
	} `json:"input"`
	Views  []View `json:"views"`
	Losses []Loss `json:"losses"`
	// NotFaithful names consumers (below a release) for which part of the
	// stream cannot be served faithfully and is refused by design; the views
	// say what the consumer must show instead.
	NotFaithful []Loss `json:"notFaithful"`
}

func loadExpectations(dir string) ([]*Expect, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.expect.json"))
	if err != nil {
		return nil, err
	}
	var out []*Expect
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		e := &Expect{Name: strings.TrimSuffix(filepath.Base(f), ".expect.json")}
		if err := json.Unmarshal(b, e); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name+".sse")); err != nil {
			return nil, fmt.Errorf("%s has no stream: %v", f, err)
		}
		if len(e.Views) == 0 || e.Views[0].From != "1.0.0" {
			return nil, fmt.Errorf("%s: the first view must be the 1.0.0 view", f)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// baseView picks the view a consumer of version v starts from: the one with
// the highest From not above v (else the lowest), each view inheriting what
// it leaves out from the view above it.
func (e *Expect) baseView(v Ver) View {
	views := append([]View(nil), e.Views...)
	sort.Slice(views, func(i, j int) bool { return parseVer(views[j].From).Less(parseVer(views[i].From)) })
	merged := make([]View, len(views))
	for i, w := range views {
		if i > 0 {
			up := merged[i-1]
			if w.Messages == nil {
				w.Messages = up.Messages
			}
			if w.State == nil {
				w.State = up.State
			}
			if w.Result == nil {
				w.Result = up.Result
			}
			if w.PendingInterrupts == nil {
				w.PendingInterrupts = up.PendingInterrupts
			}
			if w.RunErrors == nil {
				w.RunErrors = up.RunErrors
			}
		}
		merged[i] = w
	}
	for _, w := range merged {
		if !v.Less(parseVer(w.From)) {
			return w
		}
	}
	return merged[len(merged)-1]
}

// Expected is the derived view for one consumer release.
type Expected struct {
	Messages          []any
	State             any
	Result            any
	PendingInterrupts any // nil when the release has no pendingInterrupts
	RunErrors         []any
}

var (
	v0041 = parseVer("0.0.41")
	v0045 = parseVer("0.0.45")
	v0048 = parseVer("0.0.48")
	v0049 = parseVer("0.0.49")
	v0054 = parseVer("0.0.54")
	v0059 = parseVer("0.0.59")
	v1    = parseVer("1.0.0")
)

// derive applies, to the base view, every protocol change the consumer
// release v predates. fromEvents says the messages were materialised from
// events (TEXT_MESSAGE_START.name exists only from 0.0.48; a message's own
// name field is older).
func (e *Expect) derive(v Ver) Expected {
	base := e.baseView(v)
	var x Expected
	for _, raw := range base.Messages {
		var m map[string]any
		mustUnmarshal(raw, &m)
		if m = deriveMessage(m, v, true); m != nil {
			x.Messages = append(x.Messages, m)
		}
	}
	mustUnmarshal(orNull(base.State), &x.State)
	mustUnmarshal(orNull(base.Result), &x.Result)
	mustUnmarshal(orNull(base.RunErrors), &x.RunErrors)
	if x.RunErrors == nil {
		x.RunErrors = []any{}
	}
	if !v.Less(v0054) {
		var pi []any
		mustUnmarshal(orNull(base.PendingInterrupts), &pi)
		if pi == nil {
			pi = []any{}
		}
		if v.Less(v0059) {
			for _, i := range pi {
				delete(i.(map[string]any), "subagentRunId")
			}
		}
		x.PendingInterrupts = pi
	}
	return x
}

// deriveMessage reshapes one 1.0 message for release v, or drops it (nil).
// Each rule was observed on the published client of the boundary release
// (see README.md).
func deriveMessage(m map[string]any, v Ver, fromEvents bool) map[string]any {
	m = deepCopy(m).(map[string]any)
	role, _ := m["role"].(string)
	if v.Less(v0041) && role == "activity" {
		return nil // activity role from 0.0.41
	}
	if v.Less(v0045) && role == "reasoning" {
		return nil // reasoning role from 0.0.45
	}
	if v.Less(v0045) {
		delete(m, "encryptedValue")
		for _, tc := range asSlice(m["toolCalls"]) {
			delete(tc.(map[string]any), "encryptedValue")
		}
	}
	if v.Less(v0048) && fromEvents && role == "assistant" {
		delete(m, "name") // TEXT_MESSAGE_START.name from 0.0.48
	}
	if v.Less(v0059) {
		delete(m, "subagentRunId")
		delete(m, "metadata")
		for _, tc := range asSlice(m["toolCalls"]) {
			delete(tc.(map[string]any), "metadata")
		}
	}
	if parts, ok := m["content"].([]any); ok {
		if role == "tool" && v.Less(v1) {
			m["content"] = textOf(parts) // tool results are strings before 1.0
		} else {
			m["content"] = deriveParts(parts, v)
		}
	}
	return m
}

func deriveParts(parts []any, v Ver) any {
	var out []any
	for _, p := range parts {
		p := p.(map[string]any)
		typ, _ := p["type"].(string)
		src, _ := p["source"].(map[string]any)
		if v.Less(v1) {
			if typ != "binary" {
				delete(p, "id") // part ids are 1.0 (a binary part's upload id is older)
			}
			if typ == "text" {
				delete(p, "metadata")
			}
			if src != nil && src["type"] == "file" {
				continue // file sources are 1.0 only
			}
		}
		if v.Less(v0049) && src != nil {
			// media parts from 0.0.49; before, a binary part needs a mimeType
			if _, ok := src["mimeType"]; !ok {
				continue
			}
			if md, ok := p["metadata"].(map[string]any); ok {
				if fn, ok := md["filename"]; ok {
					p["metadata"] = map[string]any{"filename": fn}
				} else {
					delete(p, "metadata")
				}
			}
		}
		out = append(out, p)
	}
	if v.Less(v0041) {
		return textOf(parts) // string content only before 0.0.41
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func textOf(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		p := p.(map[string]any)
		if p["type"] == "text" {
			s, _ := p["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// --- comparison -----------------------------------------------------------

// normalize makes two readings of the same content compare equal: a null
// optional field reads as absent (nulls-for-absent), and a legacy binary part
// reads as the media part it is equivalent to (mime prefix picks the type,
// data/url become the source, filename moves to metadata), so a consumer that
// reads both forms may be handed either.
func normalize(x any) any {
	switch t := x.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range t {
			if v == nil {
				continue
			}
			out[k] = normalize(v)
		}
		if out["type"] == "binary" {
			return normalize(binaryAsMedia(out))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			out[i] = normalize(v)
		}
		return out
	}
	return x
}

func binaryAsMedia(b map[string]any) map[string]any {
	mime, _ := b["mimeType"].(string)
	kind := "document"
	for _, k := range []string{"image", "audio", "video"} {
		if strings.HasPrefix(mime, k+"/") {
			kind = k
		}
	}
	m := map[string]any{"type": kind}
	switch {
	case b["data"] != nil:
		m["source"] = map[string]any{"type": "data", "value": b["data"], "mimeType": mime}
	case b["url"] != nil:
		m["source"] = map[string]any{"type": "url", "value": b["url"], "mimeType": mime}
	default:
		m["source"] = map[string]any{"type": "legacy-id", "value": b["id"], "mimeType": mime}
	}
	if fn, ok := b["filename"]; ok {
		m["metadata"] = map[string]any{"filename": fn}
	}
	return m
}

// match compares expected with actual after normalising both; the expected
// string "*" matches any string (an id the relay or client had to mint). It
// returns "" or where they differ.
func match(expected, actual any) string {
	return diff("", normalize(expected), normalize(actual))
}

func diff(path string, e, a any) string {
	if s, ok := e.(string); ok && s == "*" {
		if _, ok := a.(string); ok {
			return ""
		}
	}
	switch et := e.(type) {
	case map[string]any:
		at, ok := a.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: expected an object, got %s", orRoot(path), short(a))
		}
		keys := map[string]bool{}
		for k := range et {
			keys[k] = true
		}
		for k := range at {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			ev, eok := et[k]
			av, aok := at[k]
			switch {
			case !eok:
				return fmt.Sprintf("%s/%s: unexpected %s", path, k, short(av))
			case !aok:
				return fmt.Sprintf("%s/%s: missing, expected %s", path, k, short(ev))
			}
			if d := diff(path+"/"+k, ev, av); d != "" {
				return d
			}
		}
		return ""
	case []any:
		at, ok := a.([]any)
		if !ok {
			return fmt.Sprintf("%s: expected an array, got %s", orRoot(path), short(a))
		}
		for i := 0; i < len(et) && i < len(at); i++ {
			if d := diff(fmt.Sprintf("%s/%d", path, i), et[i], at[i]); d != "" {
				return d
			}
		}
		if len(et) != len(at) {
			return fmt.Sprintf("%s: expected %d items, got %d (%s)", orRoot(path), len(et), len(at), short(a))
		}
		return ""
	}
	if !reflect.DeepEqual(e, a) {
		return fmt.Sprintf("%s: expected %s, got %s", orRoot(path), short(e), short(a))
	}
	return ""
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func short(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 160 {
		return string(b[:160]) + "…"
	}
	return string(b)
}

func mustUnmarshal(b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		panic(err)
	}
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func asSlice(x any) []any {
	s, _ := x.([]any)
	return s
}

func deepCopy(x any) any {
	b, _ := json.Marshal(x)
	var y any
	_ = json.Unmarshal(b, &y)
	return y
}
