package main

import (
	"bytes"
	"strings"
	"testing"
)

// Both modes hand every byte on, in order: here through cat, with a line
// longer than any buffer on the way and a last line without its newline.
func TestRelay(t *testing.T) {
	in := "{\"a\":1}\n" + strings.Repeat("x", 300<<10) + "\n{\"b\":2}"
	for _, mode := range [][]string{{}, {"-lines"}} {
		var out bytes.Buffer
		if err := run(append(mode, "--", "cat"), strings.NewReader(in), &out); err != nil {
			t.Fatalf("relay %v: %v", mode, err)
		}
		want := in
		if len(mode) > 0 {
			want += "\n" // whole lines: the last one gets its end
		}
		if out.String() != want {
			t.Errorf("relay %v: %d bytes out for %d in, or changed", mode, out.Len(), len(in))
		}
	}
}
