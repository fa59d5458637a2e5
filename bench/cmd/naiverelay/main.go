// Command naiverelay is the design agui-relay rejected, kept as a baseline:
// a net/http relay that decodes every event into a map with encoding/json,
// applies the translation on the map, and encodes it again. Its flush policy
// is agui-relay's (flush when the upstream reader is drained), so the
// difference measured is the decode/re-encode.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agui-relay/agui-relay/bench/naive"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8082", "producer base URL")
	mode := flag.String("translate", "none", "none | up (THINKING_* to REASONING_*, for a 1.0 consumer) | down (1.0 to a 0.0.45 consumer)")
	flag.Parse()
	r := &relay{upstream: strings.TrimRight(*upstream, "/"), mode: naive.Mode(*mode), client: &http.Client{Transport: &http.Transport{
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
	mode     naive.Mode
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
	sh := &naive.Shaper{Mode: rl.mode}
	if err := sh.Copy(br, bw, func() { bw.Flush(); fl.Flush() }); err != nil && r.Context().Err() == nil {
		log.Printf("naiverelay: reading upstream: %v", err)
	}
	bw.Flush()
	fl.Flush()
}
