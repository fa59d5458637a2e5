package main

import (
	"fmt"
	"io"
)

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agui-relay serve: not implemented yet")
	return 1
}
