package config

import (
	"strings"
	"testing"
)

func TestStoreKey(t *testing.T) {
	env := map[string]string{"PGPASS": "s3cret"}
	c, err := Parse(strings.NewReader("store: postgres://junction:${PGPASS}@db:5432/junction\n"), "yaml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://junction:s3cret@db:5432/junction"; c.Store != want {
		t.Errorf("Store = %q, want %q", c.Store, want)
	}
	if len(c.Version()) != 12 {
		t.Errorf("Version() = %q, want 12 hex digits", c.Version())
	}
	other, err := Parse(strings.NewReader("store: postgres://other@db/junction\n"), "yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Version() == c.Version() {
		t.Errorf("two different files have the same Version %q", c.Version())
	}
	if d := Diff(c, other); len(d.Sections) != 1 || d.Sections[0] != "store" {
		t.Errorf("Diff sections = %v, want [store]", d.Sections)
	}
}

func TestStoreKeyBad(t *testing.T) {
	_, err := Parse(strings.NewReader("store: mysql://root:hunter2@db/x\n"), "yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "store: want a PostgreSQL URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Parse(mysql store) = %v, want an error naming store and the form, without the password", err)
	}
}
