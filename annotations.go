package junction

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// verbatimAnnotations splits a source's tool _meta into the _meta to
// list (without [MetaAnnotations]) and the annotations object given
// there, or nil when there is none or it is not a JSON object. meta
// itself is not changed.
func verbatimAnnotations(meta mcp.Meta) (mcp.Meta, json.RawMessage) {
	v, ok := meta[MetaAnnotations]
	if !ok {
		return meta, nil
	}
	rest := maps.Clone(meta)
	delete(rest, MetaAnnotations)
	if len(rest) == 0 {
		rest = nil
	}
	s, _ := v.(string)
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
		return rest, nil
	}
	var compact bytes.Buffer
	if json.Compact(&compact, []byte(s)) != nil {
		return rest, nil
	}
	return rest, compact.Bytes()
}

// toolJSON encodes t as go-sdk would, but with annotations (when not nil)
// as its annotations object, byte for byte.
func toolJSON(t *mcp.Tool, annotations json.RawMessage) (json.RawMessage, error) {
	if annotations == nil {
		return json.Marshal(t)
	}
	c := *t
	c.Annotations = nil
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, errors.New("tool did not encode as an object")
	}
	out := make([]byte, 0, len(b)+len(annotations)+16)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"annotations":`...)
	out = append(out, annotations...)
	return append(out, '}'), nil
}

// listedTools is a tools/list result whose tools' annotations objects,
// where their sources gave them verbatim, are written as given (go-sdk's
// encoding of mcp.ToolAnnotations adds the hints it cannot tell absent).
type listedTools struct {
	*mcp.ListToolsResult
	annotations map[string]json.RawMessage // by listed name
}

func (l *listedTools) MarshalJSON() ([]byte, error) {
	shell := *l.ListToolsResult
	shell.Tools = nil
	b, err := json.Marshal(&shell)
	if err != nil {
		return nil, err
	}
	start, end := -1, -1
	rawjson.ObjectSpans(b, func(key []byte, s, e int) {
		if string(key) == "tools" {
			start, end = s, e
		}
	})
	if start < 0 {
		return nil, errors.New("tools/list result has no tools member")
	}
	var out bytes.Buffer
	out.Grow(len(b) + 512*len(l.Tools))
	out.Write(b[:start])
	out.WriteByte('[')
	for i, t := range l.Tools {
		if i > 0 {
			out.WriteByte(',')
		}
		tb, err := toolJSON(t, l.annotations[t.Name])
		if err != nil {
			return nil, err
		}
		out.Write(tb)
	}
	out.WriteByte(']')
	out.Write(b[end:])
	return out.Bytes(), nil
}

// withVerbatimAnnotations returns r to be written with the annotations
// its tools' sources gave verbatim: r itself when none of them did.
func (v *View) withVerbatimAnnotations(r *mcp.ListToolsResult) mcp.Result {
	h := v.hub
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	if t.verbatim == 0 {
		return r
	}
	var ann map[string]json.RawMessage
	for _, tool := range r.Tools {
		if e := t.toolIndex[tool.Name]; e != nil && e.annotations != nil {
			if ann == nil {
				ann = make(map[string]json.RawMessage)
			}
			ann[tool.Name] = e.annotations
		}
	}
	if ann == nil {
		return r
	}
	return &listedTools{ListToolsResult: r, annotations: ann}
}

// servedAnnotations returns the annotations of the view's tool name as
// its source gave them verbatim, or nil.
func (v *View) servedAnnotations(name string) json.RawMessage {
	h := v.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	if e := h.table.toolIndex[name]; e != nil && v.allows(name) {
		return e.annotations
	}
	return nil
}
