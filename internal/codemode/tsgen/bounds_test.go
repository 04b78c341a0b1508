package tsgen

import (
	"fmt"
	"strings"
	"testing"
)

func declOf(t *testing.T, input, output string) (string, Binding) {
	t.Helper()
	tool := Tool{Name: "s__t", Server: "s", LocalName: "t", InputSchema: []byte(input)}
	if output != "" {
		tool.OutputSchema = []byte(output)
	}
	bs := Bind([]Tool{tool})
	d := DeclarationFile(bs)
	checkTS(t, d)
	checkSignature(t, bs[0], Signature(bs[0]))
	return strings.TrimPrefix(d, Prelude()), bs[0]
}

func TestCycles(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         []string
	}{
		{"root", `{"type":"object","properties":{"self":{"$ref":"#"}}}`,
			[]string{"function t(args?: t.Args)", "type Args = {self?: t.Args};"}},
		{"mutual", `{"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"array","items":{"$ref":"#/$defs/A"}}},"properties":{"a":{"$ref":"#/$defs/A"}}}`,
			[]string{"a?: t.A", "type A = {b?: t.B};", "type B = t.A[];"}},
		{"alias loop", `{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"properties":{"a":{"$ref":"#/$defs/A"}}}`,
			[]string{"a?: unknown"}},
		{"self alias", `{"$defs":{"A":{"$ref":"#/$defs/A"}},"properties":{"a":{"$ref":"#/$defs/A"}}}`,
			[]string{"a?: unknown"}},
		{"definitions and pointer", `{"definitions":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/definitions/node"}}}}},"properties":{"n":{"$ref":"#/definitions/node"},"m":{"$ref":"#/properties/n"}}}`,
			[]string{"n?: t.Node", "m?: t.Node", "type Node = {kids?: t.Node[]};"}},
		{"name clash", `{"$defs":{"a":{"type":"string"},"A":{"type":"number"},"Promise":{"type":"boolean"},"t":{"type":"null"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#/$defs/A"},"z":{"$ref":"#/$defs/Promise"},"w":{"$ref":"#/$defs/t"}}}`,
			[]string{"type A = string;", "type A_2 = number;", "type Promise_ = boolean;", "type T = null;"}},
		{"escaped pointer", `{"$defs":{"a/b":{"type":"string"},"c~d":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/a~1b"},"y":{"$ref":"#/$defs/c~0d"}}}`,
			[]string{"type A_b = string;", "type C_d = number;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := declOf(t, tc.schema, "")
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("declarations lack %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestDepthBound(t *testing.T) {
	s := `{"type":"string"}`
	for range 60 {
		s = `{"type":"object","properties":{"a":` + s + `},"required":["a"]}`
	}
	d, b := declOf(t, s, s)
	if !strings.Contains(d, "a: unknown;") && !strings.Contains(d, "a: unknown}") {
		t.Errorf("deep nesting not cut to unknown:\n%s", d)
	}
	if n := strings.Count(d, "a: {"); n > 2*(MaxDepth+1) {
		t.Errorf("%d levels of nesting, want at most %d per schema", n, MaxDepth+1)
	}
	if sig := Signature(b); strings.Count(sig, "{") > 2*(MaxDepth+1) {
		t.Errorf("signature nests too deep: %s", sig)
	}
	// Far deeper than maxJSONDepth: not parsed, so any object.
	deep := strings.Repeat(`{"items":`, 10000) + "1" + strings.Repeat("}", 10000)
	d, _ = declOf(t, deep, "")
	if !strings.Contains(d, "args?: {[key: string]: unknown}") {
		t.Errorf("too deep a schema is not free-form:\n%s", d)
	}
}

func TestSizeBound(t *testing.T) {
	props := func(n int, nested bool) string {
		var ps []string
		for i := range n {
			typ := `{"type":"string","description":"` + strings.Repeat("words ", 30) + `"}`
			if nested {
				typ = `{"type":"object","properties":{"x":{"type":"object","properties":{"y":` + typ + `}}}}`
			}
			ps = append(ps, fmt.Sprintf(`"p%d":%s`, i, typ))
		}
		return `{"type":"object","properties":{` + strings.Join(ps, ",") + `}}`
	}
	for _, tc := range []struct {
		name   string
		schema string
		want   string
	}{
		{"fits", props(20, false), ""},
		{"simplified", props(300, true), "types nested deeper than two levels are shown as unknown"},
		{"bare", props(3000, false), "its arguments are shown as any object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, b := declOf(t, tc.schema, "")
			decl := toolDecl(b, "  ")
			if len(decl) > MaxToolBytes {
				t.Errorf("declaration is %d bytes, over %d", len(decl), MaxToolBytes)
			}
			if tc.want == "" && strings.Contains(d, "Note:") || tc.want != "" && !strings.Contains(d, tc.want) {
				t.Errorf("want note %q in:\n%.2000s", tc.want, d)
			}
			if sig := Signature(b); len(sig) > MaxSignatureBytes {
				t.Errorf("signature is %d bytes, over %d", len(sig), MaxSignatureBytes)
			}
		})
	}
}

// TestWorkBound: a schema whose inlined expansion is exponential (each
// definition uses the next twice) is rendered with named types, within
// the bounds.
func TestWorkBound(t *testing.T) {
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"D%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/D%d"},"r":{"$ref":"#/$defs/D%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"D40":{"type":"string"}`)
	s := `{"$defs":{` + strings.Join(defs, ",") + `},"properties":{"root":{"$ref":"#/$defs/D0"}}}`
	d, b := declOf(t, s, s) // returns at all: the expansion is bounded
	if !strings.Contains(d, "type D39 = {l?: t.D40; r?: t.D40};") {
		t.Errorf("named types missing:\n%.3000s", d)
	}
	if sig := Signature(b); len(sig) > MaxSignatureBytes {
		t.Errorf("signature is %d bytes", len(sig))
	}
}

// TestLargeSchemas: wide enums, unions and intersections stay fast.
func TestLargeSchemas(t *testing.T) {
	var lits, members []string
	for i := range 50000 {
		lits = append(lits, fmt.Sprintf("%q", fmt.Sprint("v", i%40000)))
		members = append(members, fmt.Sprintf(`{"const":%d}`, i))
	}
	for _, s := range []string{
		`{"enum":[` + strings.Join(lits, ",") + `]}`,
		`{"anyOf":[` + strings.Join(members, ",") + `]}`,
		`{"allOf":[` + strings.Join(members, ",") + `]}`,
	} {
		// The work is bounded by the output's: no test fails on a
		// timing, so the bound checked is the declaration's size.
		d, _ := declOf(t, `{"type":"object","properties":{"p":`+s+`}}`, s)
		if len(d) > 2*MaxToolBytes {
			t.Errorf("declaration of %d bytes, over twice MaxToolBytes (%d)", len(d), MaxToolBytes)
		}
	}
}
