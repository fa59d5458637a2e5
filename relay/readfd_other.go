//go:build !unix

package relay

import "errors"

// canPoll: elsewhere the producer's connection is read the ordinary way.
const canPoll = false

func readFD(int, []byte) (int, error) { return 0, errors.ErrUnsupported }
