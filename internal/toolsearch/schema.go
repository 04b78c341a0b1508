package toolsearch

import (
	"encoding/json"
	"sort"
)

// Bounds on the walk of an input schema: how deep properties may nest
// and how many strings one schema may give.
const (
	maxSchemaDepth   = 5
	maxSchemaStrings = 512
)

// schemaText appends to dst the parameter names, titles, descriptions and
// string enum values of an input schema: its properties, nested ones too
// (under properties, items, additionalProperties, anyOf, oneOf and allOf),
// to a depth of 5 and 512 strings. A schema that is not a JSON object
// gives nothing.
func schemaText(raw json.RawMessage, dst []string) []string {
	if len(raw) == 0 {
		return dst
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return dst
	}
	w := schemaWalker{out: dst}
	w.walk(v, 0)
	return w.out
}

type schemaWalker struct{ out []string }

func (w *schemaWalker) add(s string) {
	if s != "" && len(w.out) < maxSchemaStrings {
		w.out = append(w.out, s)
	}
}

func (w *schemaWalker) walk(v any, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxSchemaDepth || len(w.out) >= maxSchemaStrings {
		return
	}
	if depth > 0 {
		for _, k := range []string{"title", "description"} {
			if s, ok := m[k].(string); ok {
				w.add(s)
			}
		}
		if enum, ok := m["enum"].([]any); ok {
			for _, e := range enum {
				if s, ok := e.(string); ok {
					w.add(s)
				}
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names) // a bounded walk must cut at the same place every time
		for _, k := range names {
			w.add(k)
			w.walk(props[k], depth+1)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		w.walk(m[k], depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := m[k].([]any); ok {
			for _, s := range list {
				w.walk(s, depth+1)
			}
		}
	}
}
