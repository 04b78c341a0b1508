package diagramtest

import (
	"fmt"
	"strings"
)

// FanOut returns the diagram of a fan-out that once ate the memory of the
// hub: start feeds n template nodes, each of which copies the whole input
// text (.input.text), and all of them lead to an endpoint whose output is
// "fan-out done".
func FanOut(n int) string {
	var b strings.Builder
	b.WriteString("nodes:\n  - {id: start, type: start}\n  - {id: end, type: endpoint, output: fan-out done}\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: t%d, type: template, template: \"{{ .input.text }}\"}\n", i)
	}
	b.WriteString("edges:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {from: start, to: t%d}\n  - {from: t%d, to: end}\n", i, i)
	}
	return b.String()
}

// Fetch returns a diagram whose http node fetches the URL in its input
// (.input.url) with the given node timeout, and whose output is the body.
func Fetch(timeout string) string {
	return fmt.Sprintf(`
nodes:
  - {id: start, type: start}
  - {id: get, type: http, url: "{{ .input.url }}", timeout: %s}
  - {id: end, type: endpoint, output: "{{ .get.body }}"}
edges: [{from: start, to: get}, {from: get, to: end}]
`, timeout)
}
