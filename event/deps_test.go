package event

import (
	"os/exec"
	"strings"
	"testing"
)

// The event layer has no network in it: neither it nor anything it uses
// imports a socket package, fasthttp or the relay (its poller and wire
// code), so the commands and the tests use it without them.
func TestEventLayerImportsNoNetwork(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 || deps[len(deps)-1] != "github.com/agui-relay/agui-relay/event" {
		t.Fatalf("go list -deps listed %q, not the event package's dependencies", deps)
	}
	for _, dep := range deps {
		switch {
		case dep == "net", strings.HasPrefix(dep, "net/"), strings.HasPrefix(dep, "crypto/tls"),
			strings.HasPrefix(dep, "github.com/valyala/"), dep == "go.uber.org/zap",
			strings.HasPrefix(dep, "github.com/agui-relay/agui-relay/relay"),
			strings.HasPrefix(dep, "github.com/agui-relay/agui-relay/metrics"),
			strings.HasPrefix(dep, "github.com/agui-relay/agui-relay/record"):
			t.Errorf("the event layer depends on %s", dep)
		}
	}
}
