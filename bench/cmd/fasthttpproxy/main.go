// Command fasthttpproxy is the bench's floor for the relay's chosen
// dependencies: fasthttp's server and HostClient, each request handed to
// the producer as the server read it and the answer's body streamed back
// as it comes, one read of it a chunk written and flushed. Nothing is
// looked at (no AG-UI, no input check, no headers copied or removed beyond
// what fasthttp does itself). What it costs per run is what the relay's
// HTTP stack costs before the relay does anything of its own.
package main

import (
	"flag"
	"log"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8084", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8082", "producer base URL (its host and port)")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		log.Fatalf("upstream %q: %v", *upstream, err)
	}
	srv := newServer(newClient(u.Host))
	log.Fatal(srv.ListenAndServe(*listen))
}

// newClient is the pool of connections to the producer at addr: answers
// streamed, as many connections as streams (the bench's idle phase holds
// thousands), none of fasthttp's own additions to the request.
func newClient(addr string) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                     addr,
		StreamResponseBody:       true,
		MaxConns:                 30000,
		MaxIdleConnDuration:      4 * time.Second,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
}

// newServer proxies every request through hc.
func newServer(hc *fasthttp.HostClient) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			// The request goes as it came; the answer's body is the
			// client's stream, closed by the server once written, which
			// puts the producer's connection back in the pool.
			if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
				ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			}
		},
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		ReadBufferSize:        16 << 10,
	}
}
