package main

import (
	"fmt"
	"io"
)

func runVersions(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agui-relay versions: not implemented yet")
	return 1
}
