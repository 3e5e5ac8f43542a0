package main

import (
	"fmt"
	"os"
)

func reportCommand(args []string) int {
	fmt.Fprintln(os.Stderr, "observer report: not built yet")
	return 1
}
