package relay

import (
	"encoding/json"
	"strings"
	"testing"
)

// A request the server cannot parse never has its headers reflected: not
// into the 400's problem body, not into a log line (issue #24). Each
// malformation is sent with a secret in each header position, 1 KiB deep
// too, and the response and every log line are searched for it.
func TestMalformedRequestsEchoNoHeaders(t *testing.T) {
	h, seen := recordingProducer(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	const secret = "s3cr3t-TOKEN-4f9a"
	positions := map[string]func(string) string{
		"first":   func(s string) string { return s + "Host: relay\r\nAccept: */*\r\n" },
		"middle":  func(s string) string { return "Host: relay\r\n" + s + "Accept: */*\r\n" },
		"last":    func(s string) string { return "Host: relay\r\nAccept: */*\r\n" + s },
		"1KiB in": func(s string) string { return "Host: relay\r\nX-Pad: " + strings.Repeat("p", 1024) + "\r\n" + s },
	}
	secrets := []string{
		"Authorization: Bearer " + secret + "\r\n",
		"Cookie: session=" + secret + "\r\n",
		"X-Api-Key: " + secret + "\r\n",
	}
	malformed := []struct {
		name, line, tail, kind string
	}{
		{"invalid byte in the target", "GET /a\x01b HTTP/1.1\r\n", "Connection: close\r\n\r\n", "invalid byte in the request target"},
		{"header line with no colon", "GET / HTTP/1.1\r\n", "NoColonHere\r\nConnection: close\r\n\r\n", "header line without a colon"},
		{"two Content-Lengths", "POST / HTTP/1.1\r\n", "Content-Length: 2\r\nContent-Length: 3\r\n\r\nab", "more than one Content-Length"},
		{"unsupported Transfer-Encoding", "POST / HTTP/1.1\r\n", "Transfer-Encoding: gzip\r\n\r\nab", "unsupported Transfer-Encoding"},
	}
	for _, m := range malformed {
		for pos, place := range positions {
			for _, s := range secrets {
				raw := m.line + place(s) + m.tail
				out := rawExchange(t, addr, raw)
				if statusOf(out) != 400 {
					t.Fatalf("%s, secret %s: status %d, want 400:\n%s", m.name, pos, statusOf(out), out)
				}
				if strings.Contains(out, secret) {
					t.Errorf("%s, secret %s: the response reflects it:\n%s", m.name, pos, out)
				}
				_, body, _ := strings.Cut(out, "\r\n\r\n")
				var p Problem
				if err := json.Unmarshal([]byte(body), &p); err != nil {
					t.Fatalf("%s: not a problem body: %v\n%s", m.name, err, out)
				}
				if p.Type != "urn:agui-relay:bad-request" || p.Detail != m.kind {
					t.Errorf("%s, secret %s: problem %q %q, want the kind %q alone", m.name, pos, p.Type, p.Detail, m.kind)
				}
			}
		}
	}
	logged := 0
	for _, e := range h.logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(v), "\r", ""), "\n", ""))
		}
		if strings.Contains(line, secret) || strings.Contains(line, "Authorization") || strings.Contains(line, "Cookie") {
			t.Errorf("a log line reflects the request's headers: %s", line)
		}
		if strings.Contains(line, "fasthttp") {
			logged++
		}
	}
	if logged == 0 {
		t.Error("no log line of the server's for the malformed requests")
	}
	if n := len(seen()); n != 0 {
		t.Errorf("the producer was contacted %d times", n)
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
