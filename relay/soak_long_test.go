//go:build soak

package relay

import (
	"testing"
	"time"
)

// TestSoakLong is the soak of issue #7, run by make soak (go test -tags
// soak -run Soak ./relay/): 2000 streams open at once for 70 seconds, each
// 100 events 50ms apart, one in four read by a 0.0.45 consumer through the
// translation chain.
func TestSoakLong(t *testing.T) {
	res := runSoak(t, soakConfig{concurrent: 2000, events: 100, pace: 50 * time.Millisecond, duration: 70 * time.Second, legacy: 4})
	if res.streams < 10000 {
		t.Errorf("the soak ran too little: %v", res)
	}
}
