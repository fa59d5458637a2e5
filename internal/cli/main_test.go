package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the commands' tests from the repository's root, where the
// files they check (README.md, docs/, the Makefile, the Dockerfile,
// testdata/) and the module's main package are: paths in them read as a
// user at the root reads them.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "cli tests: to the repository root:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
