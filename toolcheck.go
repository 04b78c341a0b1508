package junction

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkTool reports why t is not a definition hosts may be given, or
// nil: the rules go-sdk's server applies when a tool is added, so that a
// view serves what go-sdk would. Its input schema must be there and be
// of type "object", an output schema must be JSON, and the arguments
// its input schema binds to HTTP headers (x-mcp-header, 2026-07-28) must
// be of a primitive type and name each header once, as a token.
func checkTool(t *mcp.Tool) error {
	switch s := t.InputSchema.(type) {
	case nil:
		return errors.New("missing input schema")
	case *jsonschema.Schema:
		if s == nil {
			return errors.New("input schema is nil")
		}
		if s.Type != "object" {
			return errors.New(`input schema must have type "object"`)
		}
	default:
		var m map[string]any
		if err := remarshal(t.InputSchema, &m); err != nil {
			return fmt.Errorf("can't marshal input schema to a JSON object: %v", err)
		}
		if typ := m["type"]; typ != "object" {
			return fmt.Errorf(`input schema must have type "object" (got %v)`, typ)
		}
	}
	switch s := t.OutputSchema.(type) {
	case nil:
	case *jsonschema.Schema:
		if s == nil {
			return errors.New("output schema is nil")
		}
	default:
		var m any
		if err := remarshal(t.OutputSchema, &m); err != nil {
			return fmt.Errorf("can't marshal output schema to JSON: %v", err)
		}
	}
	var root headerSchema
	if remarshal(t.InputSchema, &root) != nil {
		return nil // a schema of another shape binds no header
	}
	if err := root.checkHeaders("", map[string]bool{}); err != nil {
		return fmt.Errorf("invalid parameter header annotations: %v", err)
	}
	return nil
}

// remarshal decodes the JSON encoding of v into out.
func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// headerSchema is what checkTool reads of a schema: a property's type
// and header annotation, and an object's properties.
type headerSchema struct {
	Type       string                  `json:"type"`
	Header     json.RawMessage         `json:"x-mcp-header,omitempty"`
	Properties map[string]headerSchema `json:"properties,omitempty"`
}

// checkHeaders checks the header annotations of s's properties, whose
// path begins with prefix; seen holds the headers named so far, in lower
// case.
func (s headerSchema) checkHeaders(prefix string, seen map[string]bool) error {
	for name, prop := range s.Properties {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if prop.Header != nil {
			if prop.Type != "string" && prop.Type != "integer" && prop.Type != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header can only be applied to primitive types (integer, string, boolean), got %q", path, prop.Type)
			}
			var header string
			if json.Unmarshal(prop.Header, &header) != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", path)
			}
			if i := strings.IndexFunc(header, func(c rune) bool { return !isTokenChar(c) }); i >= 0 {
				return fmt.Errorf("property %q: x-mcp-header value %q contains invalid character %q", path, header, []rune(header[i:])[0])
			}
			if lower := strings.ToLower(header); seen[lower] {
				return fmt.Errorf("property %q: duplicate x-mcp-header value %q (case-insensitive)", path, header)
			} else {
				seen[lower] = true
			}
		}
		if err := prop.checkHeaders(path, seen); err != nil {
			return err
		}
	}
	return nil
}

// isTokenChar reports whether c may stand in an HTTP field name (RFC
// 9110's tchar).
func isTokenChar(c rune) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
