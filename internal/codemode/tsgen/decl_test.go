package tsgen

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestPreludeParses(t *testing.T) { checkTS(t, Prelude()) }

// TestGolden declares real tools (testdata/catalog.json, from the tool
// catalog: filesystem, GitHub and others) and synthetic ones that use
// every schema feature (testdata/synthetic.json).
func TestGolden(t *testing.T) {
	for _, file := range []string{"catalog.json", "synthetic.json"} {
		t.Run(file, func(t *testing.T) {
			bs := Bind(loadTools(t, file))
			file := DeclarationFile(bs)
			checkTS(t, file)
			decls := strings.TrimPrefix(file, Prelude())
			golden(t, strings.TrimSuffix(filepath.Base(t.Name()), ".json")+".d.ts.golden", decls)
			var sigs strings.Builder
			for _, b := range bs {
				s := Signature(b)
				checkSignature(t, b, s)
				sigs.WriteString(s + "\n")
			}
			golden(t, strings.TrimSuffix(filepath.Base(t.Name()), ".json")+".signatures.golden", sigs.String())
		})
	}
}

func TestDeclarationsOneServer(t *testing.T) {
	bs := Bind(loadTools(t, "catalog.json"))
	d := Declarations(bs, "GitHub")
	if !strings.HasPrefix(d, `/** The tools of server "GitHub". */`+"\ndeclare namespace GitHub {") {
		t.Errorf("GitHub declarations start:\n%s", d)
	}
	if strings.Contains(d, "read_file") {
		t.Errorf("GitHub declarations include another server's tool")
	}
	checkTS(t, Prelude()+d)
	if got := Declarations(bs, "no such server"); got != "" {
		t.Errorf("Declarations of an unknown server = %q, want \"\"", got)
	}
}

func TestSchemaMapping(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"string", `{"type":"string"}`, `string`},
		{"integer", `{"type":"integer"}`, `number`},
		{"type array", `{"type":["integer","null"]}`, `number | null`},
		{"nullable", `{"type":"string","nullable":true}`, `string | null`},
		{"enum", `{"enum":["a","b",1,true,null]}`, `"a" | "b" | 1 | true | null`},
		{"enum of objects", `{"enum":[{"a":1}]}`, `unknown`},
		{"const", `{"const":"x\"y"}`, `"x\"y"`},
		{"anyOf", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `string | null`},
		{"anyOf open", `{"anyOf":[{"type":"string"},{}]}`, `unknown`},
		{"anyOf constraints", `{"type":"string","anyOf":[{"minLength":1},{"pattern":"x"}]}`, `string`},
		{"oneOf of arrays", `{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"number"}]}}`, `(string | number)[]`},
		{"allOf", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"number"}}}]}`, `{a: string} & {b?: number}`},
		{"allOf with union", `{"allOf":[{"type":"string"},{"enum":["a","b"]}]}`, `string & ("a" | "b")`},
		{"array", `{"type":"array","items":{"type":"string"}}`, `string[]`},
		{"array no items", `{"type":"array"}`, `unknown[]`},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, `[string, number]`},
		{"open tuple", `{"type":"array","items":[{"type":"string"}]}`, `[string, ...unknown[]]`},
		{"object", `{"type":"object","properties":{"a b":{"type":"string"},"c":{"type":"number"}},"required":["c"]}`, `{"a b"?: string; c: number}`},
		{"free object", `{"type":"object"}`, `{[key: string]: unknown}`},
		{"closed empty object", `{"type":"object","additionalProperties":false}`, `{}`},
		{"map", `{"type":"object","additionalProperties":{"type":"string"}}`, `{[key: string]: string}`},
		{"props and map", `{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":{"type":"string"}}`, `{n?: number} & {[key: string]: string}`},
		{"props and open", `{"properties":{"n":{"type":"number"}},"additionalProperties":true}`, `{n?: number; [key: string]: unknown}`},
		{"required only", `{"type":"object","required":["x"]}`, `{x: unknown}`},
		{"true", `true`, `unknown`},
		{"false", `false`, `never`},
		{"unknown type", `{"type":"decimal"}`, `unknown`},
		{"bad ref", `{"$ref":"#/nowhere"}`, `unknown`},
		{"external ref", `{"$ref":"other.json#/a"}`, `unknown`},
		{"inline ref", `{"type":"array","items":{"$ref":"#/$defs/a"},"$defs":{"a":{"type":"string"}}}`, `string[]`},
		{"number literal", `{"const":-1.5e3}`, `-1.5e3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenderer(style{maxDepth: MaxDepth}, "f")
			d := r.doc([]byte(tc.schema), "Result")
			got := unknownT
			if d != nil {
				got = r.typ(d, d.root, "", 0, "")
			}
			if got != tc.want {
				t.Errorf("type of %s = %s, want %s", tc.schema, got, tc.want)
			}
			checkTS(t, "type T = "+got+";")
		})
	}
}

func TestArgsOptional(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   string
	}{
		{`{"type":"object","properties":{}}`, `f.g(args?: {}): Promise<ContentBlock[]>`},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `f.g(args?: {a?: string}): Promise<ContentBlock[]>`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `f.g(args: {a: string}): Promise<ContentBlock[]>`},
		{`{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","required":["a"]}}}`, `f.g(args: {a: unknown}): Promise<ContentBlock[]>`},
		{``, `f.g(args?: {[key: string]: unknown}): Promise<ContentBlock[]>`},
		{`{not json`, `f.g(args?: {[key: string]: unknown}): Promise<ContentBlock[]>`},
	} {
		b := Binding{Namespace: "f", Func: "g", Tool: Tool{Name: "g", InputSchema: []byte(tc.schema)}}
		if got := Signature(b); got != tc.want {
			t.Errorf("Signature with schema %s = %s, want %s", tc.schema, got, tc.want)
		}
	}
	b := Binding{Namespace: "f", Func: "g", Tool: Tool{Name: "g", OutputSchema: []byte(`{not json`)}}
	if got, want := Signature(b), `f.g(args?: {[key: string]: unknown}): Promise<unknown>`; got != want {
		t.Errorf("Signature with a bad output schema = %s, want %s", got, want)
	}
}

func TestCommentsEscaped(t *testing.T) {
	tool := Tool{
		Name: "a*/b", Server: "s*/", Title: "T */ x", Description: "ends */ here\r\nand \u2028 /* nests",
		InputSchema: []byte(`{"type":"object","properties":{"p":{"type":"string","description":"*/ oops","format":"*/","default":"*/"}}}`),
	}
	d := DeclarationFile(Bind([]Tool{tool}))
	checkTS(t, d)
	if strings.Count(d, "*/ oops") > 0 || strings.Contains(d, "ends */") {
		t.Errorf("unescaped */ in:\n%s", d)
	}
}
