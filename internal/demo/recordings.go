package demo

import (
	"embed"
	"io/fs"
)

//go:embed recordings
var recordings embed.FS

// Recordings returns the streams the demo agent replays when the relay
// runs it in-process: recordings/<version>/<scenario>.sse.
func Recordings() fs.FS {
	sub, err := fs.Sub(recordings, "recordings")
	if err != nil {
		panic(err) // "recordings" is a valid path; fs.Sub fails only on an invalid one
	}
	return sub
}
