// Package commalist reads the comma-separated lists of flags and
// environment variables (-tools, JUNCTION_TOOLS, DIODE_MCP_TOOLS, a list
// of API keys): items trimmed, empty ones dropped, as Diode reads its
// -mcp-tools. It imports only the standard library.
package commalist

import "strings"

// Split returns the items of a comma-separated list, each trimmed of
// spaces, without empty ones: "a, b,,c " gives a, b, c; "" and " , "
// give none (nil).
func Split(list string) []string {
	var out []string
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
