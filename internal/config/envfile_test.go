package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseEnvFile(t *testing.T) {
	t.Parallel()
	in := "# comment\r\n\nA=1\nexport B = two words # note\nC=\"x\\ny \\\"q\\\" #not-comment\"\nD='its ${RAW}'\nE=\"multi\nline\"\nF=\nG=a#b\nA=override\n"
	got, err := ParseEnvFile(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ParseEnvFile: %v", err)
	}
	want := map[string]string{
		"A": "override", "B": "two words", "C": "x\ny \"q\" #not-comment", "D": "its ${RAW}",
		"E": "multi\nline", "F": "", "G": "a#b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseEnvFile mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEnvFileErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"A=1\nnot a pair\n", `line 2: expected KEY=value, got "not a pair"`},
		{"1A=x\n", `line 1: invalid variable name "1A"`},
		{"A B=x\n", `line 1: invalid variable name "A B"`},
		{"A=ok\nB=\"open\nstill open\n", `line 2: unterminated quoted value for B`},
		{"A='x' y\n", `line 1: unexpected text after the closing quote of A`},
	} {
		_, err := ParseEnvFile(strings.NewReader(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseEnvFile(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestReadEnvFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("TOKEN=abc\nbad line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadEnvFile(path)
	if want := path + `:2: expected KEY=value, got "bad line"`; err == nil || err.Error() != want {
		t.Errorf("ReadEnvFile = %v, want %q", err, want)
	}
	if _, err := ReadEnvFile(path + ".missing"); err == nil {
		t.Error("ReadEnvFile(missing) = nil error")
	}
}

func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{"A=1\n", "export B='x'\n", "C=\"a\\n\nb\"\n", "# c\n\nD=e # f\n", "E=\"", "F='"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		env, err := ParseEnvFile(strings.NewReader(in))
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			return
		}
		for k := range env {
			if !validEnvFileKey(k) {
				t.Fatalf("accepted invalid key %q", k)
			}
		}
	})
}
