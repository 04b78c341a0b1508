package dataplane

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// From 2026-07-28 on, a tool's input schema may bind an argument to an
// HTTP header: a property annotated "x-mcp-header": "Region" is sent
// again, beside the body, as the header Mcp-Param-Region, so that a load
// balancer can route on it without reading the body. The server refuses
// a call whose headers and arguments disagree. The plane checks them
// itself, as go-sdk's handler does and with its errors (code -32020,
// HTTP 400), so the calls of such tools take the raw path too.

// paramPrefix opens the name of a header that carries an argument.
const paramPrefix = "Mcp-Param-"

// A paramBinding is one argument a tool's input schema binds to a header.
type paramBinding struct {
	path   []string // the property's name, and those of the objects it is in, from the arguments down
	header string   // the whole header name, Mcp-Param- and the annotation
}

// paramBindings returns the bindings of tool's input schema, found as
// go-sdk's handler finds them (each property, at any depth, whose
// x-mcp-header is a non-empty string), in the order of their paths.
// Tools are immutable once served, so the answer is kept.
func (p *Plane) paramBindings(tool *mcp.Tool) []paramBinding {
	if v, ok := p.bindings.Load(tool); ok {
		return v.([]paramBinding)
	}
	var bs []paramBinding
	if b, err := json.Marshal(tool.InputSchema); err == nil && rawjson.Contains(b, []byte(`"x-mcp-header"`)) {
		var s boundSchema
		if decodeParams(b, &s) {
			bs = s.collect(nil, nil)
		}
		// In a fixed order, so that of several mismatches the same one
		// is named each time (go-sdk's handler names any).
		slices.SortFunc(bs, func(a, b paramBinding) int { return slices.Compare(a.path, b.path) })
	}
	p.bindings.Store(tool, bs)
	return bs
}

// boundSchema is what a binding needs of a schema: a property's
// annotation and the properties of an object. Type is not used, but
// decoded, as go-sdk decodes it: a schema whose type is not a string (an
// array of types) binds nothing.
type boundSchema struct {
	Type       string                 `json:"type"`
	Header     json.RawMessage        `json:"x-mcp-header"`
	Properties map[string]boundSchema `json:"properties"`
}

// collect appends the bindings of s's properties, whose path begins with
// prefix, to out.
func (s boundSchema) collect(prefix []string, out []paramBinding) []paramBinding {
	for name, prop := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(prop.Header, &header) == nil && header != "" {
			out = append(out, paramBinding{path: path, header: paramPrefix + header})
		}
		out = prop.collect(path, out)
	}
	return out
}

// checkParamHeaders checks the Mcp-Param-* headers h of a call of tool
// with arguments args (as sent; nil when absent), and returns the error
// to answer with HTTP 400, or nil when they agree. The rules and the
// messages are go-sdk's handler's (SEP-2243): a bound argument that is
// present and not null needs its header, with the same value (a string
// as it is, or Base64 between =?base64? and ?=; an integer within ±2^53
// in decimal; a boolean as true or false), and one that is absent or null
// must have none. Arguments that are not an object are not checked, nor
// headers that no binding names.
func (p *Plane) checkParamHeaders(h http.Header, tool *mcp.Tool, args json.RawMessage) *jsonrpc.Error {
	bs := p.paramBindings(tool)
	if len(bs) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if len(args) > 0 && !decodeParams(args, &obj) {
		return nil
	}
	for _, b := range bs {
		if msg := checkParamHeader(h.Get(b.header), b, obj); msg != "" {
			return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: " + msg}
		}
	}
	return nil
}

// checkParamHeader checks one binding's header value (empty: absent)
// against the arguments, and says what is wrong, or "".
func checkParamHeader(value string, b paramBinding, args map[string]json.RawMessage) string {
	param := strings.Join(b.path, ".")
	arg, ok := argumentAt(args, b.path)
	if !ok || string(arg) == "null" {
		if value != "" {
			return fmt.Sprintf("unexpected %s header for absent or null parameter %q", b.header, param)
		}
		return ""
	}
	if value == "" {
		return fmt.Sprintf("missing %s header for parameter %q", b.header, param)
	}
	decoded, ok := decodeParamHeader(value)
	if !ok {
		return b.header + " header contains invalid Base64 encoding"
	}
	want, ok := headerPrimitive(arg)
	if !ok {
		return fmt.Sprintf("%s header present but body parameter %q is not a primitive type", b.header, param)
	}
	if !sameParam(decoded, want) {
		return fmt.Sprintf("%s header value '%s' does not match body value", b.header, value)
	}
	return ""
}

// argumentAt returns the value at path in args, through nested objects.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, name := range path[1:] {
		if !ok {
			break
		}
		var obj map[string]json.RawMessage
		if !decodeParams(cur, &obj) {
			return nil, false
		}
		cur, ok = obj[name]
	}
	return cur, ok
}

// decodeParamHeader undoes a header value's Base64 wrapping, if it has
// one; false if what is wrapped is not Base64.
func decodeParamHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	return string(b), err == nil
}

// maxSafeInteger is the largest integer a double holds exactly (2^53-1);
// an integer argument bound to a header must be within ±maxSafeInteger.
const maxSafeInteger = 1<<53 - 1

// headerPrimitive returns the value of arg as a header carries it (a
// string, an int64 or a bool), or false if arg is none of these: a
// number with a fraction or beyond ±2^53, an object, an array.
func headerPrimitive(arg json.RawMessage) (any, bool) {
	var v any
	if !decodeParams(arg, &v) {
		return nil, false
	}
	switch v := v.(type) {
	case string, bool:
		return v, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < -maxSafeInteger || v > maxSafeInteger {
			return nil, false
		}
		return int64(v), true
	}
	return nil, false
}

// sameParam reports whether the header's (decoded) text carries want: an
// integer in any notation that parses to it, a string or boolean exactly.
func sameParam(text string, want any) bool {
	switch w := want.(type) {
	case int64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < -maxSafeInteger || f > maxSafeInteger {
			return false
		}
		return int64(f) == w
	case string:
		return text == w
	case bool:
		return text == strconv.FormatBool(w)
	}
	return false
}
