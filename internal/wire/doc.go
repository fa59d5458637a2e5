// Package wire is the relay's wire layer: what touches a socket below
// HTTP. It holds the decoder of a producer's HTTP/1.1 body framing
// (chunked, Content-Length or until close), decoding in place in the
// caller's buffer, a relayed stream's two ends (the producer's response body
// read with it, Body, and the consumer's chunked response, ChunkWriter), the
// raw reads and writes of a non-blocking socket's descriptor (ReadFD,
// WritevFD), the TCP connection made of them (Conn), the Poller that
// watches connections for a hangup or input from one goroutine and
// releases memory once every stream it counts is idle, and the Handover
// that carries a persistent connection's streams on one goroutine, serving its
// requests through a ConnServer (an HTTP server behind one method: the
// package imports no HTTP).
//
// It has no package-level state: a Framing, a Body, a ChunkWriter, a
// Conn, a Poller and a Handover are the caller's values (a Poller's
// goroutine and forced collections exist only for the caller that made
// one and asked), and the descriptors are the caller's, borrowed for each
// call.
package wire
