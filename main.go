// Command agui-relay is a sidecar between AG-UI consumers and producers that
// bridges protocol versions while the stream flows. See README.md; the
// commands are in internal/cli.
package main

import (
	"os"

	"github.com/agui-relay/agui-relay/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
