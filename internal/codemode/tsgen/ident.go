package tsgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A Tool is one tool the hub lists, as code mode exposes it.
type Tool struct {
	// Name is the name the hub lists the tool under, unique among the
	// hub's tools; scripts can always call tools[Name](args).
	Name string
	// Server is the name of the source (server) the tool comes from; it
	// names the tool's namespace.
	Server string
	// LocalName is the tool's name at its server, which names its
	// function in the namespace; "" means Name.
	LocalName string
	// Title and Description document the function.
	Title, Description string
	// InputSchema is the JSON Schema of the arguments; nil or invalid
	// means any object.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the structured content the tool
	// returns; nil means the function returns the result's content blocks.
	OutputSchema json.RawMessage
}

// local is the tool's name at its server.
func (t Tool) local() string {
	if t.LocalName != "" {
		return t.LocalName
	}
	return t.Name
}

// A Binding places a tool in the script's scope: as function Func of
// namespace Namespace, called as Namespace.Func(args).
type Binding struct {
	Namespace, Func string
	Tool            Tool
}

// Expr is the JavaScript expression of the tool's function,
// "namespace.func".
func (b Binding) Expr() string { return b.Namespace + "." + b.Func }

// MaxIdentLen bounds the length of a generated identifier (before a
// collision suffix).
const MaxIdentLen = 64

// Bind gives every tool its namespace and function identifier, by the
// rules in the package documentation. The result is sorted by Namespace
// then Func and does not depend on the order of tools. Tool names should
// be unique (the hub's are); tools with equal names still get distinct
// identifiers.
func Bind(tools []Tool) []Binding {
	ts := append([]Tool(nil), tools...)
	sort.SliceStable(ts, func(i, j int) bool { return toolLess(ts[i], ts[j]) })

	// Namespaces: one per distinct server name.
	var servers []string
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t.Server] {
			seen[t.Server] = true
			servers = append(servers, t.Server)
		}
	}
	nsItems := make([]item, len(servers))
	for i, s := range servers {
		nsItems[i] = item{name: s}
	}
	nsIdents := assign(nsItems, "server")
	ns := make(map[string]string, len(servers))
	for i, s := range servers {
		ns[s] = nsIdents[i]
	}

	// Functions: per server.
	byServer := map[string][]int{}
	for i, t := range ts {
		byServer[t.Server] = append(byServer[t.Server], i)
	}
	out := make([]Binding, len(ts))
	for _, s := range servers {
		idx := byServer[s]
		items := make([]item, len(idx))
		for k, i := range idx {
			items[k] = item{name: ts[i].local(), tie: fmt.Sprintf("%09d", k)}
		}
		// idx is in toolLess order, so tie (the position) is order-free.
		ids := assign(items, "tool")
		for k, i := range idx {
			out[i] = Binding{Namespace: ns[s], Func: ids[k], Tool: ts[i]}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Func < out[j].Func
	})
	return out
}

// toolLess is a total order on tools that does not depend on input order
// (only identical tools compare equal).
func toolLess(a, b Tool) bool {
	for _, p := range [][2]string{
		{a.Server, b.Server}, {a.local(), b.local()}, {a.Name, b.Name},
		{a.LocalName, b.LocalName}, {a.Title, b.Title}, {a.Description, b.Description},
	} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	if c := bytes.Compare(a.InputSchema, b.InputSchema); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.OutputSchema, b.OutputSchema) < 0
}

type item struct {
	name string // the original name
	tie  string // breaks ties between equal names
}

// assign maps names to distinct identifiers: rules 1-4 of the package
// documentation. The result is parallel to items.
func assign(items []item, fallback string) []string {
	base := make([]string, len(items))
	exact := make([]bool, len(items))
	taken := map[string]bool{}
	for i, it := range items {
		base[i] = Ident(it.name, fallback)
		exact[i] = base[i] == it.name
		taken[base[i]] = true
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		i, j := order[x], order[y]
		if base[i] != base[j] {
			return base[i] < base[j]
		}
		if exact[i] != exact[j] {
			return exact[i]
		}
		if items[i].name != items[j].name {
			return items[i].name < items[j].name
		}
		return items[i].tie < items[j].tie
	})
	out := make([]string, len(items))
	var rest []int
	for k, i := range order {
		if k > 0 && base[order[k-1]] == base[i] {
			rest = append(rest, i)
			continue
		}
		out[i] = base[i]
	}
	for _, i := range rest {
		for n := 2; ; n++ {
			c := base[i] + "_" + strconv.Itoa(n)
			if !taken[c] {
				taken[c] = true
				out[i] = c
				break
			}
		}
	}
	return out
}

// Ident maps a name to a JavaScript identifier by rules 1-3 of the package
// documentation, using fallback (itself an identifier) when nothing of the
// name is left. It does not resolve collisions; [Bind] does.
func Ident(name, fallback string) string {
	var b strings.Builder
	sep := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isIdentByte(c) {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteByte(c)
			continue
		}
		sep = true
	}
	s := b.String()
	if s == "" {
		s = fallback
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	if len(s) > MaxIdentLen {
		s = s[:MaxIdentLen]
	}
	if reserved[s] {
		s += "_"
	}
	return s
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isIdentifierName reports whether s can be a property name without
// quotes (ASCII IdentifierName; reserved words are allowed there).
func isIdentifierName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) && s[i] != '$' {
			return false
		}
	}
	return true
}

// reserved are the identifiers generated names avoid: reserved words of
// JavaScript (including strict mode and contextual ones that are errors as
// bindings somewhere), TypeScript's type keywords and declaration
// keywords, the standard and usual host globals a script may need, and the
// names the Prelude declares.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		break case catch class const continue debugger default delete do else
		enum export extends false finally for function if import in instanceof
		new null return super switch this throw true try typeof var void while
		with yield let static implements interface package private protected
		public await async arguments eval

		any unknown never number string boolean symbol bigint object undefined
		declare namespace module global abstract readonly keyof infer unique
		as asserts is satisfies require

		globalThis Object Function Array Number Boolean String Symbol BigInt
		Date Promise RegExp Error AggregateError EvalError RangeError
		ReferenceError SyntaxError TypeError URIError JSON Math Intl Reflect
		Proxy Map Set WeakMap WeakSet WeakRef FinalizationRegistry Iterator
		ArrayBuffer SharedArrayBuffer DataView Atomics Int8Array Uint8Array
		Uint8ClampedArray Int16Array Uint16Array Int32Array Uint32Array
		Float16Array Float32Array Float64Array BigInt64Array BigUint64Array
		NaN Infinity isNaN isFinite parseInt parseFloat decodeURI
		decodeURIComponent encodeURI encodeURIComponent escape unescape
		setTimeout clearTimeout setInterval clearInterval queueMicrotask
		structuredClone TextEncoder TextDecoder URL URLSearchParams fetch atob
		btoa print self window process exports

		tools console Console ToolError ToolIndex ContentBlock TextContent
		ImageContent AudioContent ResourceLink EmbeddedResource
		TextResourceContents BlobResourceContents Annotations
	`) {
		m[w] = true
	}
	return m
}()
