// Command naiverelay is the design agui-relay rejected, kept as a baseline:
// a net/http relay that decodes every event into a map with encoding/json,
// applies the translation on the map, and encodes it again. Its flush policy
// is agui-relay's (flush when the upstream reader is drained), so the
// difference measured is the decode/re-encode.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8082", "producer base URL")
	mode := flag.String("translate", "none", "none | up (THINKING_* to REASONING_*, for a 1.0 consumer) | down (1.0 to a 0.0.45 consumer)")
	flag.Parse()
	r := &relay{upstream: strings.TrimRight(*upstream, "/"), mode: *mode, client: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		DisableCompression:  true,
	}}}
	srv := &http.Server{Addr: *listen, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

type relay struct {
	upstream string
	mode     string
	client   *http.Client
}

func (rl *relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The input is read whole first: handing r.Body to the Transport races
	// with the server closing it once the response starts (see
	// httputilproxy), which cuts streams.
	in, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, rl.upstream+r.URL.RequestURI(), bytes.NewReader(in))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	out.Header.Set("Accept", "text/event-stream")
	resp, err := rl.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	bw := bufio.NewWriterSize(w, 32<<10)
	st := &state{}
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err != io.EOF && r.Context().Err() == nil {
				log.Printf("naiverelay: reading upstream: %v", err)
			}
			break
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				rl.event(bw, st, data)
				data = data[:0]
			}
			if br.Buffered() == 0 {
				bw.Flush()
				fl.Flush()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	bw.Flush()
	fl.Flush()
}

// state is what the up translation needs across events of one run.
type state struct {
	n        int
	reasonID string
}

func (rl *relay) event(w *bufio.Writer, st *state, data []byte) {
	var ev map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		return
	}
	if !rl.translate(st, ev) {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	w.WriteString("data: ")
	w.Write(b)
	w.WriteString("\n\n")
}

// translate rewrites ev in place; false drops it. It covers the shapes the
// bench's producer sends, nothing more.
func (rl *relay) translate(st *state, ev map[string]any) bool {
	typ, _ := ev["type"].(string)
	switch rl.mode {
	case "up":
		switch typ {
		case "THINKING_START":
			st.n++
			st.reasonID = "reasoning-" + itoa(st.n)
			ev["type"] = "REASONING_START"
			ev["messageId"] = st.reasonID
			delete(ev, "title")
		case "THINKING_END":
			ev["type"] = "REASONING_END"
			ev["messageId"] = st.reasonID
		case "THINKING_TEXT_MESSAGE_START":
			ev["type"] = "REASONING_MESSAGE_START"
			ev["messageId"] = st.reasonID + "-m"
			ev["role"] = "reasoning"
		case "THINKING_TEXT_MESSAGE_CONTENT":
			ev["type"] = "REASONING_MESSAGE_CONTENT"
			ev["messageId"] = st.reasonID + "-m"
		case "THINKING_TEXT_MESSAGE_END":
			ev["type"] = "REASONING_MESSAGE_END"
			ev["messageId"] = st.reasonID + "-m"
		}
	case "down":
		if strings.HasPrefix(typ, "SUBAGENT_") {
			return false
		}
		delete(ev, "subagentRunId")
		delete(ev, "metadata")
		switch typ {
		case "RUN_STARTED":
			delete(ev, "protocolVersion")
		case "RUN_FINISHED":
			delete(ev, "outcome")
			delete(ev, "usage")
		case "TOOL_CALL_RESULT":
			if parts, ok := ev["content"].([]any); ok {
				var sb strings.Builder
				for _, p := range parts {
					if m, ok := p.(map[string]any); ok {
						if t, ok := m["text"].(string); ok {
							sb.WriteString(t)
						}
					}
				}
				ev["content"] = sb.String()
			}
		}
	}
	return true
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
