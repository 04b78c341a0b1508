package tsgen

import (
	"fmt"
	"sort"
	"strings"
)

// Prelude returns the declarations every script shares: the content
// blocks a tool without an output schema returns, the ToolError a failed
// call throws, the tools index (tools[name](args), which each server's
// declarations extend with its own typed entries) and console.
func Prelude() string { return prelude }

const prelude = `/** One block of a tool result's content. */
type ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;

interface Annotations {
  audience?: ("user" | "assistant")[];
  priority?: number;
  lastModified?: string;
}

interface TextContent {
  type: "text";
  text: string;
  annotations?: Annotations;
  _meta?: {[key: string]: unknown};
}

interface ImageContent {
  type: "image";
  /** Base64-encoded image data. */
  data: string;
  mimeType: string;
  annotations?: Annotations;
  _meta?: {[key: string]: unknown};
}

interface AudioContent {
  type: "audio";
  /** Base64-encoded audio data. */
  data: string;
  mimeType: string;
  annotations?: Annotations;
  _meta?: {[key: string]: unknown};
}

/** A link to a resource the tool did not include. */
interface ResourceLink {
  type: "resource_link";
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
  annotations?: Annotations;
  _meta?: {[key: string]: unknown};
}

/** A resource the tool included. */
interface EmbeddedResource {
  type: "resource";
  resource: TextResourceContents | BlobResourceContents;
  annotations?: Annotations;
  _meta?: {[key: string]: unknown};
}

interface TextResourceContents {
  uri: string;
  mimeType?: string;
  text: string;
  _meta?: {[key: string]: unknown};
}

interface BlobResourceContents {
  uri: string;
  mimeType?: string;
  /** Base64-encoded data. */
  blob: string;
  _meta?: {[key: string]: unknown};
}

/**
 * Thrown by a tool call that fails: the tool reported an error, or the hub
 * could not run it.
 */
declare class ToolError extends Error {
  /**
   * What went wrong, such as "SOURCE_UNAVAILABLE", "TIMEOUT", "CANCELLED",
   * "INTERNAL", "SOURCE_ERROR", or a code of the tool's own.
   */
  readonly code: string;
  message: string;
  /** The listed name of the tool that failed. */
  readonly tool: string;
}

/** Every tool by its listed name: tools["name"](args). */
interface ToolIndex {
  [name: string]: (args?: any) => Promise<unknown>;
}

declare const tools: ToolIndex;

interface Console {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
}

declare var console: Console;
`

// Declarations returns the declarations of server's tools (those of bs
// whose Tool.Server is server): its namespace, one function per tool with
// the tool's named types in a namespace merged with the function, and the
// tools' typed entries in ToolIndex. They assume the Prelude. "" when no
// binding is of server.
func Declarations(bs []Binding, server string) string {
	var sel []Binding
	for _, b := range bs {
		if b.Tool.Server == server {
			sel = append(sel, b)
		}
	}
	if len(sel) == 0 {
		return ""
	}
	sort.SliceStable(sel, func(i, j int) bool { return sel[i].Func < sel[j].Func })
	ns := sel[0].Namespace
	var b strings.Builder
	b.WriteString(jsdoc([]string{"The tools of server " + truncate(jsString(server), maxNameInDoc) + "."}, ""))
	b.WriteString("declare namespace " + ns + " {\n")
	for i, bd := range sel {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(toolDecl(bd, "  "))
	}
	b.WriteString("}\n\ninterface ToolIndex {\n")
	seen := map[string]bool{}
	for _, bd := range sel {
		if seen[bd.Tool.Name] {
			continue
		}
		seen[bd.Tool.Name] = true
		b.WriteString("  " + jsString(bd.Tool.Name) + ": typeof " + ns + "." + bd.Func + ";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// DeclarationFile returns the Prelude and the declarations of every
// server of bs, in namespace order: the whole .d.ts text of a script's
// scope.
func DeclarationFile(bs []Binding) string {
	var b strings.Builder
	b.WriteString(Prelude())
	type srv struct{ ns, server string }
	var servers []srv
	seen := map[string]bool{}
	for _, bd := range bs {
		if !seen[bd.Tool.Server] {
			seen[bd.Tool.Server] = true
			servers = append(servers, srv{bd.Namespace, bd.Tool.Server})
		}
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ns < servers[j].ns })
	for _, s := range servers {
		b.WriteByte('\n')
		b.WriteString(Declarations(bs, s.server))
	}
	return b.String()
}

// toolDecl declares one tool's function (and its named types), each line
// indented by ind, within MaxToolBytes.
func toolDecl(b Binding, ind string) string {
	s := renderTool(b, fullStyle, ind, "")
	if len(s) <= MaxToolBytes {
		return s
	}
	full := len(s)
	s = renderTool(b, simplifiedStyle, ind, fmt.Sprintf(
		"Note: the full declaration (%d bytes) is over the %d-byte bound, so types nested deeper than two levels are shown as unknown.",
		full, MaxToolBytes))
	if len(s) <= MaxToolBytes {
		return s
	}
	return renderTool(b, bareStyle, ind, fmt.Sprintf(
		"Note: the full declaration (%d bytes) is over the %d-byte bound, so its arguments are shown as any object.",
		full, MaxToolBytes))
}

// renderTool renders one tool's declaration in style st.
func renderTool(bd Binding, st style, ind, note string) string {
	r := newRenderer(st, bd.Func)
	args, opt, ret := r.signature(bd, ind)
	var b strings.Builder
	b.WriteString(jsdoc(toolDocs(bd, note), ind))
	b.WriteString(ind + "function " + bd.Func + "(args")
	if opt {
		b.WriteByte('?')
	}
	b.WriteString(": " + args + "): Promise<" + ret + ">;\n")
	if len(r.queue) == 0 {
		return b.String()
	}
	in := ind + "  "
	b.WriteString(ind + "namespace " + bd.Func + " {\n")
	for i := 0; i < len(r.queue); i++ { // rendering may name more types
		df := r.queue[i]
		body := r.shape(df.doc, df.node, df.ptr, 0, in)
		if o, ok := df.node.(*object); ok {
			b.WriteString(jsdoc(schemaDocs(o, df.name, maxPropDoc), in))
		}
		b.WriteString(in + "type " + df.name + " = " + body + ";\n")
		if b.Len() > 2*MaxToolBytes {
			break // over the bound anyway: the caller simplifies
		}
	}
	b.WriteString(ind + "}\n")
	return b.String()
}

// signature renders the args type (and whether args may be left out) and
// the result type of a tool.
func (r *renderer) signature(bd Binding, ind string) (args string, opt bool, ret string) {
	args, opt = freeFormObject, true
	if !r.bare {
		if in := r.doc(bd.Tool.InputSchema, "Args"); in != nil {
			args = r.typ(in, in.root, "", 0, ind)
			opt = noneRequired(in)
		}
	}
	ret = "ContentBlock[]"
	if bd.Tool.OutputSchema != nil {
		ret = unknownT
		if out := r.doc(bd.Tool.OutputSchema, "Result"); out != nil && !r.bare {
			ret = r.typ(out, out.root, "", 0, ind)
		}
	}
	return args, opt, ret
}

// noneRequired reports whether the args schema is an object schema that
// requires no property, so that the argument may be left out.
func noneRequired(d *doc) bool {
	n := d.root
	if o, ok := n.(*object); ok {
		if ref, ok := o.m["$ref"].(string); ok {
			if _, t, ok := d.follow(ref); ok {
				n = t
			}
		}
	}
	o, ok := n.(*object)
	if !ok {
		return n == true
	}
	switch t := o.m["type"].(type) {
	case nil:
	case string:
		if t != "object" {
			return false
		}
	default:
		return false
	}
	schemas := []*object{o}
	if all, ok := o.m["allOf"].([]any); ok {
		for _, m := range all {
			if mo, ok := m.(*object); ok {
				schemas = append(schemas, mo)
			}
		}
	}
	for _, s := range schemas {
		if req, ok := s.m["required"].([]any); ok && len(req) > 0 {
			return false
		}
	}
	return true
}

func toolDocs(bd Binding, note string) []string {
	t := bd.Tool
	var lines []string
	if title := strings.TrimSpace(t.Title); title != "" && title != t.local() {
		lines = append(lines, truncate(title, maxNameInDoc))
	}
	if d := cleanDoc(t.Description); d != "" {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, truncate(d, maxToolDoc))
	}
	if note != "" {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, note)
	}
	if len(lines) > 0 {
		lines = append(lines, "")
	}
	return append(lines, "Also tools["+truncate(jsString(t.Name), maxNameInDoc)+"].")
}

// Signature renders one tool's function on one line, without comments or
// named types, for search results:
//
//	github.create_issue(args: {owner: string; repo: string; title: string; body?: string}): Promise<ContentBlock[]>
//
// Nested types are cut to unknown as needed to fit MaxSignatureBytes; a
// tool whose top level alone is too large gets a free-form args object.
func Signature(bd Binding) string {
	for _, depth := range []int{MaxDepth, 4, 2, 1} {
		s := signatureLine(bd, style{maxDepth: depth})
		if len(s) <= MaxSignatureBytes {
			return s
		}
	}
	return signatureLine(bd, style{bare: true})
}

func signatureLine(bd Binding, st style) string {
	r := newRenderer(st, bd.Func)
	args, opt, ret := r.signature(bd, "")
	q := ""
	if opt {
		q = "?"
	}
	return bd.Expr() + "(args" + q + ": " + args + "): Promise<" + ret + ">"
}
