//go:build !unix

package relay

import "errors"

// canPoll: elsewhere the producer's connection is read, and the consumer's
// written, the ordinary way.
const canPoll = false

func readFD(int, []byte) (int, error)            { return 0, errors.ErrUnsupported }
func writevFD(int, *[4][]byte, int) (int, error) { return 0, errors.ErrUnsupported }
