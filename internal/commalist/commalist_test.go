package commalist

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{"a, b,,c ", []string{"a", "b", "c"}},
		{" get_issue ,list_issues", []string{"get_issue", "list_issues"}},
	} {
		if got := Split(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
