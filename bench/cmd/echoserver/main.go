// Command echoserver is the benchmark's floor: a hand-written MCP stdio
// server with one tool, "echo" (see package bench/echo).
package main

import (
	"fmt"
	"os"

	"github.com/junction-mcp/junction/bench/echo"
)

func main() {
	if err := echo.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}
