// Package wire is the relay's wire layer: what touches a socket below
// HTTP. It holds the decoder of a producer's HTTP/1.1 body framing
// (chunked, Content-Length or until close), decoding in place in the
// caller's buffer, a relayed stream's two ends (the producer's answer body
// read with it, Body, and the consumer's chunked answer, ChunkWriter), the
// raw reads and writes of a non-blocking socket's descriptor (ReadFD,
// WritevFD), and the TCP connection made of them (Conn).
//
// It has no package-level state: a Framing, a Body, a ChunkWriter and a
// Conn are the caller's values, and the descriptors are the caller's,
// borrowed for each call.
package wire
