package junction

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// A Pack is an in-process [Source]: tools, resources and prompts written in
// Go and compiled into the binary. Build one with [NewPack], add features
// with its Add methods (and the generic [AddTool] for typed tools), then give
// it to [Hub.Add].
//
// Adding features after the pack is in a hub is allowed; the pack tells the
// hub, which refreshes its lists.
type Pack struct {
	name string

	mu        sync.Mutex // guards the fields below
	tools     []packTool
	resources []packResource
	templates []packTemplate
	prompts   []packPrompt
	presets   map[string][]string
	complete  func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error)
	listener  Listener
}

type packTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

type packResource struct {
	resource *mcp.Resource
	handler  mcp.ResourceHandler
}

type packTemplate struct {
	template *mcp.ResourceTemplate
	matcher  *uritemplate.Template
	handler  mcp.ResourceHandler
}

type packPrompt struct {
	prompt  *mcp.Prompt
	handler mcp.PromptHandler
}

var (
	_ Source   = (*Pack)(nil)
	_ Notifier = (*Pack)(nil)
)

// NewPack returns an empty pack. The name is the pack's source name in a
// hub (and the tool-name prefix when prefixing is on).
func NewPack(name string) *Pack {
	return &Pack{name: name}
}

// Name returns the name given to [NewPack].
func (p *Pack) Name() string { return p.name }

// AddTool adds a tool with a raw handler: arguments arrive as
// json.RawMessage, unvalidated, and the handler builds the whole result.
// The tool's InputSchema must be set and be a JSON object schema; AddTool
// panics otherwise, as registering such a tool is a programming error.
// A tool with the same name replaces the earlier one.
func (p *Pack) AddTool(t *mcp.Tool, h mcp.ToolHandler) {
	if err := checkToolSchema(t); err != nil {
		panic(fmt.Sprintf("junction: pack %q: %v", p.name, err))
	}
	p.mu.Lock()
	p.tools = slices.DeleteFunc(p.tools, func(pt packTool) bool { return pt.tool.Name == t.Name })
	p.tools = append(p.tools, packTool{t, h})
	p.mu.Unlock()
	p.changed()
}

// AddTool adds a typed tool to p. Unless set on t, the input and output
// schemas are inferred from In and Out (use `jsonschema:"..."` struct tags
// for descriptions). Arguments are validated against the input schema, with
// defaults applied, before h runs; a validation failure is a tool error
// whose text starts with `validating "arguments"`. A non-nil Out is placed
// in StructuredContent and, when h leaves Content empty, also as JSON text.
// A plain error from h becomes a tool error; a *jsonrpc.Error stays a
// protocol error.
//
// It panics if a schema cannot be inferred, as the standard library's
// template.Must does for a bad template.
func AddTool[In, Out any](p *Pack, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	tt, handler, err := typedTool(t, h)
	if err != nil {
		panic(fmt.Sprintf("junction: pack %q: tool %q: %v", p.name, t.Name, err))
	}
	p.AddTool(tt, handler)
}

// AddResource adds a resource with a fixed URI.
func (p *Pack) AddResource(r *mcp.Resource, h mcp.ResourceHandler) {
	p.mu.Lock()
	p.resources = slices.DeleteFunc(p.resources, func(pr packResource) bool { return pr.resource.URI == r.URI })
	p.resources = append(p.resources, packResource{r, h})
	p.mu.Unlock()
	p.changed()
}

// AddResourceTemplate adds an RFC 6570 URI template. It panics if the
// template does not parse.
func (p *Pack) AddResourceTemplate(t *mcp.ResourceTemplate, h mcp.ResourceHandler) {
	m, err := uritemplate.New(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("junction: pack %q: resource template %q: %v", p.name, t.URITemplate, err))
	}
	p.mu.Lock()
	p.templates = slices.DeleteFunc(p.templates, func(pt packTemplate) bool { return pt.template.URITemplate == t.URITemplate })
	p.templates = append(p.templates, packTemplate{t, m, h})
	p.mu.Unlock()
	p.changed()
}

// AddPrompt adds a prompt.
func (p *Pack) AddPrompt(pr *mcp.Prompt, h mcp.PromptHandler) {
	p.mu.Lock()
	p.prompts = slices.DeleteFunc(p.prompts, func(pp packPrompt) bool { return pp.prompt.Name == pr.Name })
	p.prompts = append(p.prompts, packPrompt{pr, h})
	p.mu.Unlock()
	p.changed()
}

// SetPreset defines a named tool set, by the pack's own tool names.
func (p *Pack) SetPreset(name string, tools ...string) {
	p.mu.Lock()
	if p.presets == nil {
		p.presets = make(map[string][]string)
	}
	p.presets[name] = slices.Clone(tools)
	p.mu.Unlock()
	p.changed()
}

// SetCompletionHandler sets the handler for completion/complete requests
// that refer to the pack's prompts or resource templates.
func (p *Pack) SetCompletionHandler(h func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error)) {
	p.mu.Lock()
	p.complete = h
	p.mu.Unlock()
}

// SetListener implements [Notifier].
func (p *Pack) SetListener(l Listener) {
	p.mu.Lock()
	p.listener = l
	p.mu.Unlock()
}

func (p *Pack) changed() {
	p.mu.Lock()
	l := p.listener
	p.mu.Unlock()
	if l != nil {
		l.CatalogChanged()
	}
}

// ResourceUpdated tells subscribed hosts that the resource at uri changed.
func (p *Pack) ResourceUpdated(uri string) {
	p.mu.Lock()
	l := p.listener
	p.mu.Unlock()
	if l != nil {
		l.ResourceUpdated(uri)
	}
}

// Catalog implements [Source]. Tools keep the order they were added in.
func (p *Pack) Catalog(context.Context) (*Catalog, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &Catalog{Presets: maps.Clone(p.presets)}
	for _, t := range p.tools {
		c.Tools = append(c.Tools, t.tool)
	}
	for _, r := range p.resources {
		c.Resources = append(c.Resources, r.resource)
	}
	for _, t := range p.templates {
		c.ResourceTemplates = append(c.ResourceTemplates, t.template)
	}
	for _, pr := range p.prompts {
		c.Prompts = append(c.Prompts, pr.prompt)
	}
	return c, nil
}

// CallTool implements [Source].
func (p *Pack) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p.mu.Lock()
	i := slices.IndexFunc(p.tools, func(t packTool) bool { return t.tool.Name == req.Params.Name })
	var h mcp.ToolHandler
	if i >= 0 {
		h = p.tools[i].handler
	}
	p.mu.Unlock()
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
	}
	return h(ctx, req)
}

// ReadResource implements [Source]: exact URIs first, then templates in
// the order they were added.
func (p *Pack) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	var h mcp.ResourceHandler
	p.mu.Lock()
	if i := slices.IndexFunc(p.resources, func(r packResource) bool { return r.resource.URI == uri }); i >= 0 {
		h = p.resources[i].handler
	} else if i := slices.IndexFunc(p.templates, func(t packTemplate) bool { return t.matcher.Match(uri) != nil }); i >= 0 {
		h = p.templates[i].handler
	}
	p.mu.Unlock()
	if h == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return h(ctx, req)
}

// GetPrompt implements [Source].
func (p *Pack) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p.mu.Lock()
	i := slices.IndexFunc(p.prompts, func(pp packPrompt) bool { return pp.prompt.Name == req.Params.Name })
	var h mcp.PromptHandler
	if i >= 0 {
		h = p.prompts[i].handler
	}
	p.mu.Unlock()
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	return h(ctx, req)
}

// Complete implements [Source].
func (p *Pack) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p.mu.Lock()
	h := p.complete
	p.mu.Unlock()
	if h == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	return h(ctx, req)
}

// checkToolSchema reports a pack's tool that no view would serve: one
// without a name, or one checkTool refuses.
func checkToolSchema(t *mcp.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("tool has no name")
	}
	if err := checkTool(t); err != nil {
		return fmt.Errorf("tool %q: %v", t.Name, err)
	}
	return nil
}

// typedTool builds a raw tool and handler from a typed one; see [AddTool].
func typedTool[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) (*mcp.Tool, mcp.ToolHandler, error) {
	tt := *t
	inResolved, err := schemaFor[In](&tt.InputSchema, true)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %v", err)
	}
	var outResolved *jsonschema.Resolved
	if tt.OutputSchema != nil || reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		if outResolved, err = schemaFor[Out](&tt.OutputSchema, false); err != nil {
			return nil, nil, fmt.Errorf("output schema: %v", err)
		}
	}
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := validateArgs(req.Params.Arguments, inResolved)
		if err != nil {
			return errorResult(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return errorResult(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if werr, ok := err.(*jsonrpc.Error); ok {
				return nil, werr
			}
			return errorResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if outResolved == nil || isNil(out) {
			return res, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		var check any
		if err := json.Unmarshal(b, &check); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		if err := outResolved.Validate(&check); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	}
	return &tt, handler, nil
}

// schemaFor fills *field with the schema inferred from T unless it is set,
// and returns it resolved for validation. An `any` input gets the empty
// object schema.
func schemaFor[T any](field *any, input bool) (*jsonschema.Resolved, error) {
	var s *jsonschema.Schema
	switch v := (*field).(type) {
	case nil:
		if input && reflect.TypeFor[T]() == reflect.TypeFor[any]() {
			s = &jsonschema.Schema{Type: "object"}
		} else {
			// A pointer output is inferred from the type it points to, so
			// the schema says "object", not ["null","object"]: hosts reject
			// the latter.
			t := reflect.TypeFor[T]()
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			var err error
			if s, err = jsonschema.ForType(t, nil); err != nil {
				return nil, err
			}
		}
		*field = s
	case *jsonschema.Schema:
		s = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			return nil, err
		}
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
}

// validateArgs decodes raw arguments into a map (absent arguments are {}),
// applies schema defaults, validates, and returns the arguments to decode
// into the typed input.
func validateArgs(raw json.RawMessage, rs *jsonschema.Resolved) (json.RawMessage, error) {
	v := make(map[string]any)
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
	}
	var inst any = v
	if err := rs.ApplyDefaults(&inst); err != nil {
		return nil, err
	}
	if err := rs.Validate(&inst); err != nil {
		return nil, err
	}
	return json.Marshal(inst)
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// errorResult is a tool-error result with err's text, as go-sdk produces
// for typed tools.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
