package main

import (
	"fmt"
	"io"
)

func runTranslate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "agui-relay translate: not implemented yet")
	return 1
}
