// Command relaylib serves agui-relay's relay package with the flags of
// "agui-relay serve" that the bench uses. It is a stand-in for the bench
// while the serve command is not wired yet, so that the relay's streaming
// core can be measured and profiled; the bench prefers the real binary as
// soon as "agui-relay serve" runs, and this command goes away then.
package main

import (
	"flag"
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/agui-relay/agui-relay/negotiate"
	"github.com/agui-relay/agui-relay/relay"
)

func main() {
	fs := flag.NewFlagSet("relaylib", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address for relayed traffic")
	admin := fs.String("admin-listen", "127.0.0.1:9090", "address for /readyz and /debug/pprof")
	upstream := fs.String("upstream", "", "producer base URL")
	consumer := fs.String("consumer-version", "", "version of consumers that do not declare one")
	producer := fs.String("producer-version", "", "version of a producer that does not declare one")
	fs.String("log-level", "error", "ignored")
	maxConns := fs.Int("upstream-max-conns", 4096, "most connections to the producer")
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	fs.Parse(args)
	r := &relay.Relay{Upstream: *upstream, Client: relay.NewClient(relay.ClientOptions{MaxConns: *maxConns})}
	var err error
	if *consumer != "" {
		if r.ConsumerVersion, err = negotiate.Parse(*consumer); err != nil {
			log.Fatal(err)
		}
	}
	if *producer != "" {
		if r.ProducerVersion, err = negotiate.Parse(*producer); err != nil {
			log.Fatal(err)
		}
	}
	http.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	go func() { log.Fatal(http.ListenAndServe(*admin, nil)) }()
	log.Fatal(r.Server().ListenAndServe(*listen))
}
