package relay

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkRunHeaders measures what a run does with headers besides
// fasthttp's parsing: the producer's request made from the consumer's
// (newRequest: its URI, the end-to-end headers, X-Forwarded-*) and the
// producer's response's headers copied to the consumer's, on the headers an
// HttpAgent's request and a Python producer's response carry.
func BenchmarkRunHeaders(b *testing.B) {
	var ctx fasthttp.RequestCtx
	var in fasthttp.Request
	if err := in.Read(bufio.NewReader(strings.NewReader("POST /agent?x=1 HTTP/1.1\r\nHost: relay:8080\r\n" +
		"Content-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: Bearer abc.def.ghi\r\n" +
		"User-Agent: node\r\nAccept-Encoding: gzip, deflate\r\nAccept-Language: *\r\nSec-Fetch-Mode: cors\r\n" +
		"Connection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"))); err != nil {
		b.Fatal(err)
	}
	ctx.Init(&in, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 40000}, nil)
	var resp fasthttp.Response
	resp.Header.SetNoDefaultContentType(true)
	if err := resp.Header.Read(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\ndate: Wed, 02 Dec 2026 03:00:00 GMT\r\n" +
		"server: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n" +
		"x-accel-buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n"))); err != nil {
		b.Fatal(err)
	}
	r := &Relay{Upstream: "http://127.0.0.1:8000/base"}
	r.once.Do(r.init)
	b.ReportAllocs()
	for b.Loop() {
		req := r.newRequest(&ctx)
		copyResponseHeaders(&ctx.Response.Header, &resp.Header)
		fasthttp.ReleaseRequest(req)
		ctx.Response.Header.Reset()
	}
}
