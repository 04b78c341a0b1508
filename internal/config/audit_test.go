package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuditSection(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader("audit:\n  output: ${DIR}/audit.jsonl\n  max_size_mb: 10\n  max_files: 3\n  arguments: true\n"), "yaml",
		func(k string) string { return map[string]string{"DIR": "/var/log/junction"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Audit{Output: "/var/log/junction/audit.jsonl", MaxSizeMB: 10, MaxFiles: 3, Arguments: true}
	if diff := cmp.Diff(want, c.Audit); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"audit:\n  outptu: stderr\n", `audit.outptu`},
		{"audit:\n  output: stderr\n  max_files: -1\n", "audit.max_files: must not be negative"},
		{"audit:\n  max_size_mb: 5\n", "audit.output: must be set"},
		{"audit:\n  arguments: yes please\n", "audit.arguments"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestAuditPathRelative: Load puts a relative audit file next to the
// config file; stderr stays stderr.
func TestAuditPathRelative(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for out, want := range map[string]string{"audit.jsonl": filepath.Join(dir, "audit.jsonl"), "stderr": "stderr"} {
		path := filepath.Join(dir, "junction.yaml")
		if err := os.WriteFile(path, []byte("audit:\n  output: "+out+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Audit.Output != want {
			t.Errorf("audit.output %q: Load made it %q, want %q", out, c.Audit.Output, want)
		}
	}
}
