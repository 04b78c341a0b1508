// Command prog releases its startup pages, then runs code and reads data
// it has not touched since: sorting through an interface, reflection,
// formatting. In a position-independent build, the tables this reads are
// relocated at start (private copies the release must keep); were they
// dropped, the program would crash here.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"

	"github.com/junction-mcp/junction/internal/memtrim"
)

type point struct {
	X, Y int
	Name string `json:"name"`
}

func main() {
	n, err := memtrim.Release()
	if err != nil {
		fmt.Fprintln(os.Stderr, "prog:", err)
		os.Exit(1)
	}
	ps := []point{{3, 1, "c"}, {1, 2, "a"}, {2, 3, "b"}}
	sort.Slice(ps, func(i, j int) bool { return ps[i].X < ps[j].X })
	b, err := json.Marshal(ps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prog:", err)
		os.Exit(1)
	}
	var s fmt.Stringer = reflect.TypeOf(ps[0])
	fmt.Printf("released=%t %s %s\n", n > 0, b, s)
}
