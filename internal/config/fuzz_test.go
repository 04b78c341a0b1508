package config

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse in every format. It must never
// panic; an error must be an Errors (or the format error); a config it
// accepts must validate again and compare equal to itself.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/claude_desktop_config.json", "testdata/.vscode/mcp.json", "testdata/junction.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
		f.Add(data, uint8(1))
		f.Add(data, uint8(2))
	}
	for _, s := range []string{
		"", "{}", "[]", "null", "servers:\n  a: {command: x}\n", `{"mcpServers": {"a": {"url": "https://h"}}}`,
		"a: &a [x]\nb: [*a, *a]\n", "{\"a\": /* c */ 1,}", "servers:\n  a:\n    env: {K: ${X:-d}}\n",
		"http: {listen: \"[::1]:0\", insecure_no_auth: true}\n", "\xef\xbb\xbf{\"servers\": {}}",
	} {
		f.Add([]byte(s), uint8(0))
	}
	env := func(k string) string {
		if k == "SET" {
			return "v"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, data []byte, fmtSel uint8) {
		format := [...]string{"", "yaml", "json"}[int(fmtSel)%3]
		c, err := Parse(bytes.NewReader(data), format, env)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("Parse error %T %v is not a non-empty Errors", err, err)
			}
			for _, e := range es {
				if e.Line < 0 || e.Msg == "" {
					t.Fatalf("bad FieldError %+v", e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
		if d := Diff(c, c); !d.Empty() {
			t.Fatalf("Diff(c, c) = %+v, want empty", d)
		}
	})
}
