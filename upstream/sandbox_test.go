package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxCheck: a sandbox that cannot be set up as written is
// refused before any server starts, with what to change.
func TestSandboxCheck(t *testing.T) {
	home := t.TempDir()
	secret := filepath.Join(home, "stores")
	os.Mkdir(secret, 0o700)
	for _, c := range []struct {
		sb   Sandbox
		want string
	}{
		{Sandbox{Level: "sometimes"}, "sometimes"},
		{Sandbox{Level: "on", ReadOnly: []string{"/no/such/dir"}}, "/no/such/dir does not exist"},
		{Sandbox{Level: "strict", Network: []string{"*"}}, "network"},
		{Sandbox{Level: "on", ReadOnly: []string{home}, Deny: []string{secret}}, secret},
	} {
		err := c.sb.Check("sh", []string{"-c", "true"}, "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v, want an error mentioning %q", c.sb, err, c.want)
		}
	}
	if err := (&Sandbox{Level: "strict", ReadWrite: []string{t.TempDir()}, Network: []string{"api.example.com"}}).Check("sh", nil, ""); err != nil {
		t.Errorf("a sound sandbox: %v", err)
	}
	var off *Sandbox
	if err := off.Check("sh", nil, ""); err != nil {
		t.Errorf("no sandbox: %v", err)
	}
}
