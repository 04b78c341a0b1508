package diagram

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"
)

// TestEditorSchema keeps docs/diagram.schema.json in step with the
// parser: the examples satisfy it, and documents Parse refuses do not.
func TestEditorSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "diagram.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving schema: %v", err)
	}
	instance := func(src string) any {
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		// Through JSON, as an editor sees the document.
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		json.Unmarshal(j, &out)
		return out
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "diagrams", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	good := []string{shoutDiagram, slowDiagram}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, string(src))
	}
	for i, src := range good {
		if err := rs.Validate(instance(src)); err != nil {
			t.Errorf("good document %d fails the schema: %v", i, err)
		}
	}
	for _, src := range []string{
		"nodes: [{id: a, type: wizard}]",
		"nodes: [{id: a, type: tool}]",
		"nodes: [{id: a, type: template, template: x, colour: red}]",
		"nodes: [{id: bad-id, type: start}]",
		"nodes: [{id: s, type: start}]\nedges: [{from: s}]",
		"nodes: [{id: s, type: start}]\nextra: 1",
		"nodes: [{id: c, type: command, command: [ls], timeout: soon}]",
	} {
		if err := rs.Validate(instance(src)); err == nil {
			t.Errorf("schema accepts a bad document:\n%s", src)
		}
		d, ps := Parse([]byte(src))
		if d != nil {
			ps = append(ps, Validate(d, &ValidateOptions{AllowCommands: true})...)
		}
		if len(ps.Errors()) == 0 {
			t.Errorf("Validate accepts a document the schema refuses:\n%s", src)
		}
	}
}
