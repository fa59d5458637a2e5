//go:build !unix

package wire

import "errors"

// CanPoll: elsewhere sockets are read and written the ordinary way.
const CanPoll = false

func ReadFD(int, []byte) (int, error)            { return 0, errors.ErrUnsupported }
func WritevFD(int, *[4][]byte, int) (int, error) { return 0, errors.ErrUnsupported }
