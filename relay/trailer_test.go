//go:build unix

package relay

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agui-relay/agui-relay/internal/testkit"
)

// largeTrailers are chunked trailers over 4 KiB, as a producer may end an
// response with (a checksum, a signature, a debug dump).
var largeTrailers = map[string]string{
	"5KiB field":      "X-Checksum: " + strings.Repeat("c", 5<<10) + "\r\n",
	"64KiB field":     "X-Checksum: " + strings.Repeat("c", 64<<10) + "\r\n",
	"64KiB of fields": strings.Repeat("X-Part: "+strings.Repeat("p", 1000)+"\r\n", 64),
}

// A proxied response (not a run) whose chunked body ends with a trailer
// over 4 KiB reaches the consumer whole, the trailer dropped as nginx drops
// a producer's trailers (proxy_pass_trailers off): it got the 200 header
// and a body cut short, then the close. The producer's connection, at a clean end,
// carries the next request.
func TestProxiedResponseWithALargeTrailerArrivesWhole(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 8<<10)
	for name, trailer := range largeTrailers {
		t.Run(name, func(t *testing.T) {
			upstream := testkit.RawProducer(t, func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+ //nolint:errcheck
					chunk(body[:len(body)/2])+chunk(body[len(body)/2:])+"0\r\n"+trailer+"\r\n")
			})
			addr, _ := rawRelay(t, upstream, func(*RunReport) {})
			consumer := testkit.Consumer(t)
			for i := range 2 {
				resp, err := consumer.Get("http://" + addr + "/info")
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(got) != body {
					t.Fatalf("request %d: %d, %d bytes of %d, then %v; want 200 and the whole body", i, resp.StatusCode, len(got), len(body), err)
				}
			}
		})
	}
}

// A run whose producer ends its stream with a trailer over 4 KiB is a
// complete run: relayed whole, no RUN_ERROR, no error in its report.
func TestRunWithALargeTrailerIsComplete(t *testing.T) {
	for name, trailer := range largeTrailers {
		t.Run(name, func(t *testing.T) {
			upstream := testkit.RawProducer(t, func(c net.Conn) {
				io.WriteString(c, streamHeader+"\r\n"+chunk(shortRunEvents)+"0\r\n"+trailer+"\r\n") //nolint:errcheck
			})
			addr, _, reports := coalescingRelay(t, upstream)
			c := testkit.DialConsumer(t, addr)
			resp, err := http.ReadResponse(postRaw(t, c), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || string(got) != shortRunEvents {
				t.Errorf("the consumer read %q, then %v; want the run's events alone", got, err)
			}
			if rep := testkit.Await(t, reports, "no run report"); rep.Terminal != "RUN_FINISHED" || rep.Err != nil || rep.Abort != "" {
				t.Errorf("report: terminal %q, err %v, abort %q; want RUN_FINISHED alone", rep.Terminal, rep.Err, rep.Abort)
			}
		})
	}
}
