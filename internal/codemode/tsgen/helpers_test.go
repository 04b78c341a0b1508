package tsgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// parseTS reports the syntax errors esbuild finds in TypeScript src.
func parseTS(src string) []string {
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, LogLevel: api.LogLevelSilent})
	var errs []string
	for _, m := range res.Errors {
		loc := ""
		if m.Location != nil {
			loc = m.Location.LineText + ": "
		}
		errs = append(errs, loc+m.Text)
	}
	return errs
}

func checkTS(t testing.TB, src string) {
	t.Helper()
	if errs := parseTS(src); len(errs) > 0 {
		t.Fatalf("esbuild rejects the output:\n%s\n--- output ---\n%s", strings.Join(errs, "\n"), src)
	}
}

// checkSignature checks that a Signature line is a valid TS method
// signature once its namespace is taken off.
func checkSignature(t testing.TB, b Binding, sig string) {
	t.Helper()
	if !strings.HasPrefix(sig, b.Namespace+"."+b.Func+"(") {
		t.Fatalf("signature %q does not start with %s(", sig, b.Expr())
	}
	checkTS(t, Prelude()+"declare const x: {"+strings.TrimPrefix(sig, b.Namespace+".")+"};\n")
}

type testTool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	LocalName    string          `json:"localName"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

func loadTools(t testing.TB, file string) []Tool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var tts []testTool
	if err := json.Unmarshal(data, &tts); err != nil {
		t.Fatal(err)
	}
	tools := make([]Tool, len(tts))
	for i, tt := range tts {
		tools[i] = Tool(tt)
	}
	return tools
}
