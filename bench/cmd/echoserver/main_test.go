package main

import (
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-protocol", "2099-01-01"}, "-protocol"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-http", "256.0.0.1:0"}, "256.0.0.1"},
	} {
		if err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error about %s", tc.args, err, tc.want)
		}
	}
}
