package wire

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// Tool annotations, verbatim. go-sdk's client decodes a tool's
// annotations into a struct whose readOnlyHint and idempotentHint are
// plain booleans, and its server writes both back always: an absent hint
// comes out as false, and a member go-sdk does not know is lost. So where
// an upstream's tools/list result is read (a stdio server's stdout, an
// HTTP server's responses), each tool whose annotations would not come
// back byte for byte gets the object, as a JSON string, in its _meta
// under [junction.MetaAnnotations]; the hub lists that object instead of
// re-encoding the struct.

// KeepAnnotations returns a tools/list result in which every tool whose
// "annotations" object go-sdk would not write back unchanged carries the
// object verbatim in its _meta (see above), and how many tools it marked.
// With none marked, or a result it cannot read, result comes back as it
// was.
func KeepAnnotations(result json.RawMessage) (json.RawMessage, int) {
	if !rawjson.Contains(result, []byte(`"annotations"`)) {
		return result, 0
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(result, &msg) != nil {
		return result, 0
	}
	var tools []json.RawMessage
	if json.Unmarshal(msg["tools"], &tools) != nil {
		return result, 0
	}
	n := 0
	for i, raw := range tools {
		if fixed, ok := keepToolAnnotations(raw); ok {
			tools[i] = fixed
			n++
		}
	}
	if n == 0 {
		return result, 0
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return result, 0
	}
	msg["tools"] = b
	out, err := json.Marshal(msg)
	if err != nil {
		return result, 0
	}
	return out, n
}

// keepToolAnnotations marks one tool of a list (see KeepAnnotations).
func keepToolAnnotations(raw json.RawMessage) (json.RawMessage, bool) {
	var tool map[string]json.RawMessage
	if json.Unmarshal(raw, &tool) != nil {
		return nil, false
	}
	ann := bytes.TrimSpace(tool["annotations"])
	if len(ann) == 0 || ann[0] != '{' {
		return nil, false
	}
	var decoded mcp.ToolAnnotations
	if json.Unmarshal(ann, &decoded) != nil {
		return nil, false
	}
	again, err := json.Marshal(&decoded)
	if err != nil {
		return nil, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, ann) != nil || bytes.Equal(compact.Bytes(), again) {
		return nil, false
	}
	var meta map[string]json.RawMessage
	if m := bytes.TrimSpace(tool["_meta"]); len(m) > 0 && !bytes.Equal(m, []byte("null")) {
		if json.Unmarshal(m, &meta) != nil {
			return nil, false // a _meta that is not an object: leave the tool alone
		}
	}
	if meta == nil {
		meta = make(map[string]json.RawMessage, 1)
	}
	s, err := json.Marshal(compact.String())
	if err != nil {
		return nil, false
	}
	meta[junction.MetaAnnotations] = s
	if tool["_meta"], err = json.Marshal(meta); err != nil {
		return nil, false
	}
	out, err := json.Marshal(tool)
	if err != nil {
		return nil, false
	}
	return out, true
}
