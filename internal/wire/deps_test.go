package wire

import (
	"os/exec"
	"strings"
	"testing"
)

// The wire layer sits below HTTP and the relay: neither it nor anything it
// uses imports fasthttp, the relay or the event layer.
func TestWireLayerImportsNoHTTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 || deps[len(deps)-1] != "github.com/agui-relay/agui-relay/internal/wire" {
		t.Fatalf("go list -deps listed %q, not the wire package's dependencies", deps)
	}
	for _, dep := range deps {
		switch {
		case strings.HasPrefix(dep, "net/http"), strings.HasPrefix(dep, "github.com/valyala/"),
			strings.HasPrefix(dep, "github.com/agui-relay/agui-relay/"):
			if dep != "github.com/agui-relay/agui-relay/internal/wire" {
				t.Errorf("the wire layer depends on %s", dep)
			}
		}
	}
}
