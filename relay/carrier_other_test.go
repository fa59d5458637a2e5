//go:build !linux

package relay

import "testing"

// platformStreamTests: none off Linux (see carrier_linux_test.go).
var platformStreamTests []struct {
	name string
	test func(*testing.T)
}
