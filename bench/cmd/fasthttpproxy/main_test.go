package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The answer streams: its first event reaches the consumer while the
// producer still holds the second back, the request's body and path reach
// the producer as sent, and the consumer's connection and the producer's
// both serve the next request.
func TestProxyStreamsAndKeepsConnections(t *testing.T) {
	release := make(chan struct{})
	conns := make(chan string, 2) // the producer's side of each request's connection
	producer := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			conns <- r.RemoteAddr
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+r.URL.RequestURI()+" "+string(body)+"\n\n") //nolint:errcheck // the test reads it
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, "data: end\n\n") //nolint:errcheck // the test reads it
		}),
	}
	pln := listen(t)
	go producer.Serve(pln) //nolint:errcheck // closed with the test
	t.Cleanup(func() { producer.Close() })

	srv := newServer(newClient(pln.Addr().String()))
	ln := listen(t)
	go srv.Serve(ln) //nolint:errcheck // closed with the test

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a hang fails below
	br := bufio.NewReader(c)
	for i, input := range []string{`{"runId":"a"}`, `{"runId":"b"}`} {
		req := "POST /agent?x=1 HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(input)) + "\r\n\r\n" + input
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("run %d: %s %v", i, resp.Status, resp.Header)
		}
		first := make([]byte, len("data: /agent?x=1 "+input+"\n\n"))
		if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: /agent?x=1 "+input+"\n\n" {
			t.Fatalf("run %d: first event %q, %v", i, first, err)
		}
		release <- struct{}{}
		rest, err := io.ReadAll(resp.Body)
		if err != nil || string(rest) != "data: end\n\n" {
			t.Fatalf("run %d: rest %q, %v", i, rest, err)
		}
	}
	if a, b := <-conns, <-conns; a != b {
		t.Errorf("the producer saw the runs from %s and %s, want one kept connection", a, b)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
