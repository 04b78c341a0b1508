package tsgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDeclarations: no schema (valid JSON or not) makes Declarations or
// Signature panic, and what they return always parses as TypeScript.
func FuzzDeclarations(f *testing.F) {
	for _, file := range []string{"catalog.json", "synthetic.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		var tts []testTool
		if err := json.Unmarshal(data, &tts); err != nil {
			f.Fatal(err)
		}
		for _, tt := range tts {
			f.Add([]byte(tt.InputSchema), []byte(tt.OutputSchema), tt.Name, tt.Server)
		}
	}
	for _, s := range []string{
		`{"$ref":"#"}`, `{"anyOf":[{"$ref":"#/anyOf/0"}]}`, `{"enum":[]}`, `{"type":[]}`,
		`{"properties":{"*/":{"description":"*/","const":"*/"}}}`, `{"items":[{"items":false}],"additionalItems":{}}`,
		`[]`, `null`, `"x"`, `{"type":"object","properties":{"":{},"0":{},"a-b":{}}}`,
	} {
		f.Add([]byte(s), []byte(s), "t", "s")
	}
	f.Fuzz(func(t *testing.T, in, out []byte, name, server string) {
		tool := Tool{Name: name, Server: server, Description: name, Title: server, InputSchema: in}
		if len(out) > 0 {
			tool.OutputSchema = out
		}
		bs := Bind([]Tool{tool, {Name: name + "2", Server: server, LocalName: name, InputSchema: out}})
		checkTS(t, DeclarationFile(bs))
		for _, b := range bs {
			checkSignature(t, b, Signature(b))
		}
	})
}
