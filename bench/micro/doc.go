// Package micro holds the bench's micro-benchmarks: the cost per event of
// shaping a recorded stream in memory, agui-relay's Stream against the
// decode/re-encode baseline, without HTTP or sockets. It has no API.
package micro
