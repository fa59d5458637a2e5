package main

import (
	"fmt"
	"io"
)

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agui-relay check: not implemented yet")
	return 1
}
