package tsgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on the work and output of one tool's declaration.
const (
	// MaxDepth is how deeply types nest before the rest is unknown.
	MaxDepth = 10
	// MaxToolBytes bounds the declaration of one tool, named types
	// included; a larger one is simplified (see the package documentation).
	MaxToolBytes = 16 << 10
	// MaxSignatureBytes bounds what Signature returns (nested types are cut
	// to fit).
	MaxSignatureBytes = 1 << 10

	maxNodes       = 20000 // schema nodes one rendering visits
	maxJSONDepth   = 256   // nesting of a schema document
	maxRefHops     = 32    // $ref chains followed
	maxPropDoc     = 1000  // bytes of a property's JSDoc text
	maxToolDoc     = 4000  // bytes of a tool's description in JSDoc
	maxNameInDoc   = 256   // bytes of a name quoted in a comment
	unknownT       = "unknown"
	freeFormObject = "{[key: string]: unknown}"
)

// object is a JSON object that keeps its keys' order, so that properties
// are declared in the order the schema's author wrote them.
type object struct {
	keys []string
	m    map[string]any
}

var errSchema = errors.New("tsgen: bad JSON")

// decode parses a JSON document into *object, []any, string,
// json.Number, bool and nil values.
func decode(raw []byte) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= maxJSONDepth {
		return nil, errSchema
	}
	switch d {
	case '{':
		o := &object{m: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, errSchema
			}
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := o.m[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.m[k] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return o, nil
	case '[':
		a := []any{}
		for dec.More() {
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
	return nil, errSchema
}

// escSeg escapes a JSON pointer segment.
func escSeg(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// parseRef parses a local reference ("#" or "#/json/pointer") into the
// pointer's canonical text and its segments.
func parseRef(ref string) (string, []string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", nil, false // another document: not resolvable here
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	if frag == "" {
		return "", nil, true
	}
	if frag[0] != '/' {
		return "", nil, false // a named anchor
	}
	segs := strings.Split(frag[1:], "/")
	var b strings.Builder
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		b.WriteByte('/')
		b.WriteString(escSeg(segs[i]))
	}
	return b.String(), segs, true
}

func resolve(root any, segs []string) (any, bool) {
	cur := root
	for _, s := range segs {
		switch c := cur.(type) {
		case *object:
			v, ok := c.m[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != s {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// A doc is one schema document (a tool's input or output schema).
type doc struct {
	root    any
	kind    string          // "Args" or "Result": the name of a type for the root
	targets map[string]bool // pointers that some $ref resolves to
	defs    map[string]*def // named types, by pointer
}

// follow resolves ref, through chains of refs, to a pointer and node that
// are not themselves a $ref.
func (d *doc) follow(ref string) (string, any, bool) {
	seen := map[string]bool{}
	for range maxRefHops {
		ptr, segs, ok := parseRef(ref)
		if !ok || seen[ptr] {
			return "", nil, false
		}
		seen[ptr] = true
		n, ok := resolve(d.root, segs)
		if !ok {
			return "", nil, false
		}
		o, isObj := n.(*object)
		if !isObj {
			return ptr, n, true
		}
		next, isRef := o.m["$ref"].(string)
		if !isRef {
			return ptr, n, true
		}
		ref = next
	}
	return "", nil, false
}

// scanTargets records in d.targets every pointer a $ref resolves to.
func (d *doc) scanTargets() {
	d.targets = map[string]bool{}
	budget := maxNodes
	var walk func(n any)
	walk = func(n any) {
		if budget--; budget < 0 {
			return
		}
		switch v := n.(type) {
		case *object:
			if ref, ok := v.m["$ref"].(string); ok {
				if ptr, _, ok := d.follow(ref); ok {
					d.targets[ptr] = true
				}
			}
			for _, k := range v.keys {
				walk(v.m[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(d.root)
}

// A def is a named type, declared as `type name = ...` in the function's
// namespace.
type def struct {
	name string
	doc  *doc
	ptr  string
	node any
}

// A style says how to render types.
type style struct {
	multiline bool // objects over several lines, with JSDoc; else one line, no comments
	named     bool // local $refs become named types; else they are inlined (cycles: unknown)
	bare      bool // no schema at all: free-form args, unknown results
	noDocs    bool // no JSDoc on properties
	maxDepth  int
}

var (
	fullStyle       = style{multiline: true, named: true, maxDepth: MaxDepth}
	simplifiedStyle = style{multiline: true, noDocs: true, maxDepth: 2}
	bareStyle       = style{multiline: true, bare: true}
)

// A renderer renders the schemas of one tool.
type renderer struct {
	style
	fn        string          // the function; qualifies named types
	names     map[string]bool // type names taken in the function's namespace
	queue     []*def          // named types, in the order they were named
	expanding map[string]bool // refs being inlined, to stop cycles
	nodes     int
}

func newRenderer(st style, fn string) *renderer {
	return &renderer{style: st, fn: fn, names: map[string]bool{fn: true}, expanding: map[string]bool{}}
}

// doc parses a schema document; nil when it is absent or not JSON.
func (r *renderer) doc(raw json.RawMessage, kind string) *doc {
	v, ok := decode(raw)
	if !ok {
		return nil
	}
	d := &doc{root: v, kind: kind, defs: map[string]*def{}}
	if r.named {
		d.scanTargets()
	}
	return d
}

// typ renders the schema n found at pointer path of d.
func (r *renderer) typ(d *doc, n any, path string, depth int, ind string) string {
	if r.named && d.targets[path] {
		return r.namedRef(d, path, n)
	}
	return r.shape(d, n, path, depth, ind)
}

// shape renders n itself (never as a reference to its own name).
func (r *renderer) shape(d *doc, n any, path string, depth int, ind string) string {
	r.nodes++
	if r.nodes > maxNodes || depth > r.maxDepth {
		return unknownT
	}
	o, ok := n.(*object)
	if !ok {
		if b, ok := n.(bool); ok && !b {
			return "never"
		}
		return unknownT
	}
	if ref, ok := o.m["$ref"].(string); ok {
		return r.ref(d, ref, depth, ind)
	}
	var parts []string
	if b := r.base(d, o, path, depth, ind); b != "" {
		parts = append(parts, b)
	}
	if all, ok := o.m["allOf"].([]any); ok {
		for i, m := range all {
			if t := r.typ(d, m, path+"/allOf/"+strconv.Itoa(i), depth+1, ind); t != unknownT {
				parts = append(parts, t)
			}
		}
		parts = dedupe(parts)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, ok := o.m[kw].([]any)
		if !ok || len(arr) == 0 {
			continue
		}
		var members []string
		open := false
		for i, m := range arr {
			t := r.typ(d, m, path+"/"+kw+"/"+strconv.Itoa(i), depth+1, ind)
			if t == unknownT {
				// A member that constrains nothing we can type (or is
				// anything): the union says nothing beyond the rest.
				open = true
				break
			}
			if t != "never" {
				members = append(members, t)
			}
		}
		switch {
		case open:
		case len(members) == 0:
			parts = appendUnique(parts, "never")
		default:
			parts = appendUnique(parts, strings.Join(dedupe(members), " | "))
		}
	}
	switch len(parts) {
	case 0:
		return unknownT
	case 1:
		return parts[0]
	}
	for i, p := range parts {
		if hasTopLevel(p, "|") {
			parts[i] = "(" + p + ")"
		}
	}
	return strings.Join(parts, " & ")
}

// base renders what const, enum and type (or, without type, the keywords
// of objects and arrays) say; "" when they say nothing.
func (r *renderer) base(d *doc, o *object, path string, depth int, ind string) string {
	nullable, _ := o.m["nullable"].(bool)
	if c, ok := o.m["const"]; ok {
		if lit, ok := literal(c); ok {
			return lit
		}
		return ""
	}
	if e, ok := o.m["enum"].([]any); ok {
		var lits []string
		for _, v := range e {
			lit, ok := literal(v)
			if !ok {
				return ""
			}
			lits = append(lits, lit)
		}
		lits = dedupe(lits)
		if len(lits) == 0 {
			return "never"
		}
		if nullable {
			lits = appendUnique(lits, "null")
		}
		return strings.Join(lits, " | ")
	}
	var types []string
	switch t := o.m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return ""
			}
			types = append(types, s)
		}
	case nil:
		if _, ok := o.m["type"]; ok {
			return ""
		}
		if hasAny(o, "properties", "additionalProperties", "patternProperties") {
			types = []string{"object"}
		} else if hasAny(o, "items", "prefixItems") {
			types = []string{"array"}
		}
	default:
		return ""
	}
	if len(types) == 0 {
		return ""
	}
	var out []string
	for _, t := range types {
		var s string
		switch t {
		case "string":
			s = "string"
		case "number", "integer":
			s = "number"
		case "boolean":
			s = "boolean"
		case "null":
			s = "null"
		case "array":
			s = r.array(d, o, path, depth, ind)
		case "object":
			s = r.object(d, o, path, depth, ind)
		default:
			return "" // a type we do not know: no information
		}
		if s == unknownT {
			return ""
		}
		out = appendUnique(out, s)
	}
	if nullable {
		out = appendUnique(out, "null")
	}
	return strings.Join(out, " | ")
}

func hasAny(o *object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := o.m[k]; ok {
			return true
		}
	}
	return false
}

func (r *renderer) array(d *doc, o *object, path string, depth int, ind string) string {
	tuple := func(kw string, elems []any, restKW string) string {
		rest := unknownT // the type of the elements after the tuple's; "" for none
		switch v := o.m[restKW].(type) {
		case bool:
			if !v {
				rest = ""
			}
		case *object:
			rest = r.typ(d, v, path+"/"+restKW, depth+1, ind)
		}
		if len(elems) == 0 {
			if rest == "" {
				return "[]"
			}
			return elem(rest) + "[]"
		}
		var ts []string
		for i, e := range elems {
			ts = append(ts, r.typ(d, e, path+"/"+kw+"/"+strconv.Itoa(i), depth+1, ind))
		}
		if rest != "" {
			ts = append(ts, "..."+elem(rest)+"[]")
		}
		return "[" + strings.Join(ts, ", ") + "]"
	}
	if pi, ok := o.m["prefixItems"].([]any); ok {
		return tuple("prefixItems", pi, "items")
	}
	switch it := o.m["items"].(type) {
	case []any:
		return tuple("items", it, "additionalItems")
	case *object, bool:
		return elem(r.typ(d, it, path+"/items", depth+1, ind)) + "[]"
	}
	return "unknown[]"
}

// elem parenthesizes an array's element type where [] would bind tighter.
func elem(t string) string {
	if hasTopLevel(t, "|&") {
		return "(" + t + ")"
	}
	return t
}

type member struct {
	key  string // already quoted when needed
	typ  string
	opt  bool
	docs []string
}

func (r *renderer) object(d *doc, o *object, path string, depth int, ind string) string {
	in := ind + "  "
	required := map[string]bool{}
	var reqOrder []string
	if req, ok := o.m["required"].([]any); ok {
		for _, v := range req {
			if s, ok := v.(string); ok && !required[s] {
				required[s] = true
				reqOrder = append(reqOrder, s)
			}
		}
	}
	var ms []member
	props, _ := o.m["properties"].(*object)
	if props != nil {
		for _, k := range props.keys {
			pn := props.m[k]
			t := r.typ(d, pn, path+"/properties/"+escSeg(k), depth+1, in)
			ms = append(ms, member{key: propKey(k), typ: t, opt: !required[k], docs: r.propDocs(k, pn)})
		}
	}
	for _, k := range reqOrder {
		if _, ok := props.lookup(k); !ok {
			ms = append(ms, member{key: propKey(k), typ: unknownT})
		}
	}
	var idx []string
	hasIdx := false
	if pp, ok := o.m["patternProperties"].(*object); ok && len(pp.keys) > 0 {
		hasIdx = true
		for _, k := range pp.keys {
			idx = append(idx, r.typ(d, pp.m[k], path+"/patternProperties/"+escSeg(k), depth+1, in))
		}
		idx = dedupe(idx)
	}
	switch ap := o.m["additionalProperties"].(type) {
	case nil:
		if _, present := o.m["additionalProperties"]; present {
			break // null: not a schema
		}
		argsRoot := d.kind == "Args" && path == ""
		if len(ms) == 0 && !hasIdx && !argsRoot {
			hasIdx = true
			idx = appendUnique(idx, unknownT)
		}
	case bool:
		if ap {
			hasIdx = true
			idx = appendUnique(idx, unknownT)
		}
	case *object:
		hasIdx = true
		idx = appendUnique(idx, r.typ(d, ap, path+"/additionalProperties", depth+1, in))
	}
	idxType := ""
	if hasIdx {
		var keep []string
		for _, t := range idx {
			if t == unknownT {
				keep = []string{unknownT}
				break
			}
			if t != "never" {
				keep = append(keep, t)
			}
		}
		idxType = strings.Join(keep, " | ")
	}
	if idxType == "" {
		return r.body(ms, ind)
	}
	index := member{key: "[key: string]", typ: idxType}
	if idxType == unknownT || len(ms) == 0 {
		return r.body(append(ms, index), ind)
	}
	// TS requires every property to fit the index signature's type; an
	// intersection says the same without that constraint.
	return r.body(ms, ind) + " & " + r.body([]member{index}, ind)
}

// lookup is nil-safe.
func (o *object) lookup(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.m[k]
	return v, ok
}

func (r *renderer) body(ms []member, ind string) string {
	if len(ms) == 0 {
		return "{}"
	}
	if !r.multiline {
		return r.oneLine(ms)
	}
	var b strings.Builder
	if line := r.oneLine(ms); len(line) <= 60 && !strings.Contains(line, "\n") && !hasDocs(ms) {
		return line
	}
	in := ind + "  "
	b.WriteString("{\n")
	for _, m := range ms {
		b.WriteString(jsdoc(m.docs, in))
		b.WriteString(in)
		b.WriteString(m.key)
		if m.opt {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		b.WriteString(m.typ)
		b.WriteString(";\n")
	}
	b.WriteString(ind)
	b.WriteByte('}')
	return b.String()
}

// oneLine renders members on one line, without comments.
func (r *renderer) oneLine(ms []member) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.key)
		if m.opt {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		b.WriteString(m.typ)
	}
	b.WriteByte('}')
	return b.String()
}

func hasDocs(ms []member) bool {
	for _, m := range ms {
		if len(m.docs) > 0 {
			return true
		}
	}
	return false
}

// propDocs is the JSDoc text of a property: its description (else title),
// format, default and deprecation.
func (r *renderer) propDocs(key string, n any) []string {
	o, ok := n.(*object)
	if !r.multiline || r.noDocs || !ok {
		return nil
	}
	return schemaDocs(o, key, maxPropDoc)
}

func schemaDocs(o *object, key string, max int) []string {
	var lines []string
	text, _ := o.m["description"].(string)
	if strings.TrimSpace(text) == "" {
		// A title, unless it only repeats the property's name, as
		// generated ones do ("call_benefit": "Call Benefit").
		text, _ = o.m["title"].(string)
		if key != "" && squash(text) == squash(key) {
			text = ""
		}
	}
	if text = cleanDoc(text); text != "" {
		lines = append(lines, truncate(text, max))
	}
	if f, ok := o.m["format"].(string); ok && f != "" {
		lines = append(lines, "@format "+truncate(f, 100))
	}
	if v, ok := o.m["default"]; ok {
		if b, err := json.Marshal(plain(v)); err == nil {
			lines = append(lines, "@default "+truncate(string(b), 200))
		}
	}
	if dep, _ := o.m["deprecated"].(bool); dep {
		lines = append(lines, "@deprecated")
	}
	return lines
}

// squash folds a name for comparison: lower case, letters and digits only.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

// cleanDoc trims a description and removes the indentation its lines
// after the first share (as in Python docstrings).
func cleanDoc(s string) string {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\n")
	indent := -1
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	if indent > 0 {
		for i := 1; i < len(lines); i++ {
			if len(lines[i]) >= indent {
				lines[i] = lines[i][indent:]
			} else {
				lines[i] = strings.TrimLeft(lines[i], " \t")
			}
		}
	}
	return strings.Join(lines, "\n")
}

// plain converts a decoded value back to what encoding/json marshals.
func plain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.m))
		for k, e := range t.m {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

func (r *renderer) ref(d *doc, ref string, depth int, ind string) string {
	ptr, node, ok := d.follow(ref)
	if !ok {
		return unknownT
	}
	if r.named {
		return r.namedRef(d, ptr, node)
	}
	key := d.kind + "#" + ptr
	if r.expanding[key] {
		return unknownT
	}
	r.expanding[key] = true
	defer delete(r.expanding, key)
	return r.shape(d, node, ptr, depth+1, ind)
}

// namedRef is the (qualified) name of the type of the node at ptr, named
// on first use.
func (r *renderer) namedRef(d *doc, ptr string, node any) string {
	df := d.defs[ptr]
	if df == nil {
		df = &def{name: r.typeName(d, ptr), doc: d, ptr: ptr, node: node}
		d.defs[ptr] = df
		r.queue = append(r.queue, df)
	}
	return r.fn + "." + df.name
}

// typeName names the type at ptr after the last property or definition
// name in the pointer (the root: Args or Result), by the identifier rules,
// with an upper-case first letter and a _2, _3, ... suffix when taken.
func (r *renderer) typeName(d *doc, ptr string) string {
	_, segs, _ := parseRef("#" + ptr)
	name := ""
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties", "$defs", "definitions", "dependentSchemas":
			if i+1 < len(segs) {
				name = segs[i+1]
				i++
			}
		}
	}
	if name == "" {
		name = d.kind
		if len(segs) > 0 {
			name = "Type"
		}
	}
	if c := name[0]; c >= 'a' && c <= 'z' {
		name = string(c-'a'+'A') + name[1:]
	}
	base := Ident(name, "Type")
	out := base
	for n := 2; r.names[out] || reserved[out]; n++ {
		out = base + "_" + strconv.Itoa(n)
	}
	r.names[out] = true
	return out
}

// literal renders a JSON value as a TS literal type.
func literal(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return jsString(t), true
	case json.Number:
		return t.String(), true
	case bool:
		if t {
			return "true", true
		}
		return "false", true
	case nil:
		return "null", true
	}
	return "", false
}

// jsString quotes s as a JS string literal (JSON's syntax, which Go
// writes with U+2028 and U+2029 escaped).
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(strings.ToValidUTF8(s, "\uFFFD")) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func propKey(k string) string {
	if isIdentifierName(k) {
		return k
	}
	return jsString(k)
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func appendUnique(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// hasTopLevel reports whether type text t has one of the operator bytes
// ops outside brackets, string literals and comments.
func hasTopLevel(t string, ops string) bool {
	depth := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(t) && t[i+1] == '*' {
				end := strings.Index(t[i+2:], "*/")
				if end < 0 {
					return false
				}
				i += end + 3
			}
		case '{', '[', '(', '<':
			depth++
		case '}', ']', ')', '>':
			depth--
		default:
			if depth == 0 && strings.IndexByte(ops, c) >= 0 {
				return true
			}
		}
	}
	return false
}

// jsdoc renders lines as a JSDoc comment indented by ind; "" when there
// are none.
func jsdoc(lines []string, ind string) string {
	var all []string
	for _, l := range lines {
		for _, s := range strings.Split(strings.ReplaceAll(l, "\r\n", "\n"), "\n") {
			all = append(all, strings.TrimRight(commentSafe(s), " \t"))
		}
	}
	for len(all) > 0 && all[len(all)-1] == "" {
		all = all[:len(all)-1]
	}
	if len(all) == 0 {
		return ""
	}
	if len(all) == 1 && len(all[0]) <= 100 {
		return ind + "/** " + all[0] + " */\n"
	}
	var b strings.Builder
	b.WriteString(ind + "/**\n")
	for _, l := range all {
		if l == "" {
			b.WriteString(ind + " *\n")
		} else {
			b.WriteString(ind + " * " + l + "\n")
		}
	}
	b.WriteString(ind + " */\n")
	return b.String()
}

// commentSafe makes s safe inside a block comment: valid UTF-8, no control
// or line-breaking characters, no "*/".
func commentSafe(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < 0x20, r == 0x7f, r == '\u2028', r == '\u2029', r == '\u0085':
			return ' '
		}
		return r
	}, s)
	return strings.ReplaceAll(s, "*/", "*\\/")
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
