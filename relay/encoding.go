package relay

import (
	"bytes"
	"compress/gzip"

	"github.com/valyala/fasthttp"
)

// ContentCoding reads the Content-Encoding of a producer's response: gz
// reports gzip, which the relay decodes; readable that it can read the
// events at all. The relay asks for identity, but a producer, or a proxy in
// front of it, may compress anyway.
func ContentCoding(ce []byte) (gz, readable bool) {
	ce = bytes.TrimSpace(ce)
	switch {
	case len(ce) == 0 || bytes.EqualFold(ce, []byte("identity")):
		return false, true
	case bytes.EqualFold(ce, []byte("gzip")) || bytes.EqualFold(ce, []byte("x-gzip")):
		return true, true
	}
	return false, false
}

// gunzipBody decodes a gzip response as it streams. Read is called only by
// the stream's goroutine (making the decoder reads the gzip header);
// CloseWithError may come from any goroutine.
type gunzipBody struct {
	body fasthttp.ReadCloserWithError
	zr   *gzip.Reader
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.body)
		if err != nil {
			return 0, err
		}
		g.zr = zr
	}
	return g.zr.Read(p)
}

func (g *gunzipBody) CloseWithError(err error) error { return g.body.CloseWithError(err) }

var _ fasthttp.ReadCloserWithError = (*gunzipBody)(nil)
