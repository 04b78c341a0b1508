package toolbox

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

// This file maps toolbox messages to MCP values. Every function is pure
// and returns an error naming the bad field instead of panicking: a
// plugin's output is untrusted input.

// emptyObjectSchema is the input schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// toolFromProto converts a plugin's tool definition. The schemas pass
// through verbatim (as json.RawMessage), after checking that they are
// JSON objects and that the input schema has "type":"object", which MCP
// requires and go-sdk enforces.
func toolFromProto(t *toolboxv1.Tool) (*mcp.Tool, error) {
	if t.GetName() == "" {
		return nil, fmt.Errorf("tool with an empty name")
	}
	out := &mcp.Tool{Name: t.GetName(), Title: t.GetTitle(), Description: t.GetDescription()}
	in, err := objectSchema(t.GetInputSchemaJson())
	if err != nil {
		return nil, fmt.Errorf("tool %q: input_schema_json: %v", t.GetName(), err)
	}
	if in == nil {
		in = emptyObjectSchema
	}
	out.InputSchema = in
	if s := t.GetOutputSchemaJson(); s != "" {
		o, err := objectSchema(s)
		if err != nil {
			return nil, fmt.Errorf("tool %q: output_schema_json: %v", t.GetName(), err)
		}
		out.OutputSchema = o
	}
	if a := t.GetAnnotations(); a != nil {
		out.Annotations = &mcp.ToolAnnotations{
			Title:           a.GetTitle(),
			ReadOnlyHint:    a.GetReadOnlyHint(),
			IdempotentHint:  a.GetIdempotentHint(),
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	out.Icons = iconsFromProto(t.GetIcons())
	if out.Meta, err = metaFromJSON(t.GetMetaJson()); err != nil {
		return nil, fmt.Errorf("tool %q: meta_json: %v", t.GetName(), err)
	}
	return out, nil
}

// objectSchema checks that s is a JSON Schema object with "type":"object"
// and returns it compacted. An empty s gives nil.
func objectSchema(s string) (json.RawMessage, error) {
	if s == "" {
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	var typ string
	if err := json.Unmarshal(probe["type"], &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`the schema must have "type": "object"`)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}

func metaFromJSON(s string) (mcp.Meta, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return mcp.Meta(m), nil
}

func iconsFromProto(in []*toolboxv1.Icon) []mcp.Icon {
	if len(in) == 0 {
		return nil
	}
	out := make([]mcp.Icon, 0, len(in))
	for _, i := range in {
		out = append(out, mcp.Icon{Source: i.GetSrc(), MIMEType: i.GetMimeType(), Sizes: i.GetSizes(), Theme: mcp.IconTheme(i.GetTheme())})
	}
	return out
}

func roleFromProto(r toolboxv1.Role) (mcp.Role, error) {
	switch r {
	case toolboxv1.Role_ROLE_USER:
		return "user", nil
	case toolboxv1.Role_ROLE_ASSISTANT:
		return "assistant", nil
	}
	return "", fmt.Errorf("role %v is not user or assistant", r)
}

func annotationsFromProto(a *toolboxv1.Annotations) (*mcp.Annotations, error) {
	if a == nil {
		return nil, nil
	}
	out := &mcp.Annotations{LastModified: a.GetLastModified(), Priority: a.GetPriority()}
	for _, r := range a.GetAudience() {
		role, err := roleFromProto(r)
		if err != nil {
			return nil, fmt.Errorf("audience: %v", err)
		}
		out.Audience = append(out.Audience, role)
	}
	return out, nil
}

// contentFromProto converts one content block.
func contentFromProto(c *toolboxv1.Content) (mcp.Content, error) {
	if c == nil {
		return nil, fmt.Errorf("nil content block")
	}
	ann, err := annotationsFromProto(c.GetAnnotations())
	if err != nil {
		return nil, err
	}
	meta, err := metaFromJSON(c.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("meta_json: %v", err)
	}
	switch k := c.GetKind().(type) {
	case *toolboxv1.Content_Text:
		return &mcp.TextContent{Text: k.Text.GetText(), Annotations: ann, Meta: meta}, nil
	case *toolboxv1.Content_Image:
		if k.Image.GetMimeType() == "" {
			return nil, fmt.Errorf("image without a mime_type")
		}
		return &mcp.ImageContent{Data: nonNil(k.Image.GetData()), MIMEType: k.Image.GetMimeType(), Annotations: ann, Meta: meta}, nil
	case *toolboxv1.Content_Audio:
		if k.Audio.GetMimeType() == "" {
			return nil, fmt.Errorf("audio without a mime_type")
		}
		return &mcp.AudioContent{Data: nonNil(k.Audio.GetData()), MIMEType: k.Audio.GetMimeType(), Annotations: ann, Meta: meta}, nil
	case *toolboxv1.Content_ResourceLink:
		l := k.ResourceLink
		if l.GetUri() == "" {
			return nil, fmt.Errorf("resource_link without a uri")
		}
		return &mcp.ResourceLink{URI: l.GetUri(), Name: l.GetName(), Title: l.GetTitle(), Description: l.GetDescription(),
			MIMEType: l.GetMimeType(), Size: l.Size, Icons: iconsFromProto(l.GetIcons()), Annotations: ann, Meta: meta}, nil
	case *toolboxv1.Content_Resource:
		rc, err := resourceContentsFromProto(k.Resource.GetResource())
		if err != nil {
			return nil, fmt.Errorf("embedded resource: %v", err)
		}
		return &mcp.EmbeddedResource{Resource: rc, Annotations: ann, Meta: meta}, nil
	}
	return nil, fmt.Errorf("content block with no kind set")
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func resourceContentsFromProto(r *toolboxv1.ResourceContents) (*mcp.ResourceContents, error) {
	if r == nil {
		return nil, fmt.Errorf("missing resource contents")
	}
	if r.GetUri() == "" {
		return nil, fmt.Errorf("resource contents without a uri")
	}
	meta, err := metaFromJSON(r.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("meta_json: %v", err)
	}
	out := &mcp.ResourceContents{URI: r.GetUri(), MIMEType: r.GetMimeType(), Meta: meta}
	switch b := r.GetBody().(type) {
	case *toolboxv1.ResourceContents_Text:
		out.Text = b.Text
	case *toolboxv1.ResourceContents_Blob:
		out.Blob = nonNil(b.Blob)
	}
	return out, nil
}

// callResultFromProto converts a plugin's tool result. tool is the
// source-local tool name, for the error text.
func callResultFromProto(tool string, r *toolboxv1.CallToolResult) (*mcp.CallToolResult, error) {
	if r == nil {
		return nil, fmt.Errorf("empty result")
	}
	out := &mcp.CallToolResult{IsError: r.GetIsError(), Content: []mcp.Content{}}
	for i, c := range r.GetContent() {
		mc, err := contentFromProto(c)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %v", i, err)
		}
		out.Content = append(out.Content, mc)
	}
	if s := r.GetStructuredContentJson(); s != "" {
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("structured_content_json is not valid JSON")
		}
		out.StructuredContent = json.RawMessage(s)
	}
	if e := r.GetError(); e != nil {
		out.IsError = true
		text, err := errorText(tool, e)
		if err != nil {
			return nil, err
		}
		out.Content = append(out.Content, &mcp.TextContent{Text: text})
	}
	var err error
	if out.Meta, err = metaFromJSON(r.GetMetaJson()); err != nil {
		return nil, fmt.Errorf("meta_json: %v", err)
	}
	return out, nil
}

// errorText renders a structured tool error as the JSON text the host
// sees, in the hub's tool-error format (see junction.ToolError) extended
// with the error's other fields.
func errorText(tool string, e *toolboxv1.Error) (string, error) {
	type violation struct {
		Field       string `json:"field"`
		Description string `json:"description"`
	}
	body := struct {
		OK    bool   `json:"ok"`
		Tool  string `json:"tool"`
		Error struct {
			Code            string          `json:"code"`
			Message         string          `json:"message"`
			Retryable       bool            `json:"retryable,omitempty"`
			FieldViolations []violation     `json:"field_violations,omitempty"`
			Details         json.RawMessage `json:"details,omitempty"`
		} `json:"error"`
	}{Tool: tool}
	body.Error.Code = ErrorCodeName(e.GetCode())
	body.Error.Message = e.GetMessage()
	body.Error.Retryable = e.GetRetryable()
	for _, v := range e.GetFieldViolations() {
		body.Error.FieldViolations = append(body.Error.FieldViolations, violation{v.GetField(), v.GetDescription()})
	}
	if d := e.GetDetailsJson(); d != "" {
		if !json.Valid([]byte(d)) {
			return "", fmt.Errorf("error.details_json is not valid JSON")
		}
		body.Error.Details = json.RawMessage(d)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ErrorCodeName returns the short name of a toolbox error code, as the
// host sees it: "INVALID_ARGUMENT", "NOT_FOUND", ... ("TOOL_ERROR" for
// an unspecified or unknown code).
func ErrorCodeName(c toolboxv1.ErrorCode) string {
	name, ok := toolboxv1.ErrorCode_name[int32(c)]
	if !ok || c == toolboxv1.ErrorCode_ERROR_CODE_UNSPECIFIED {
		return "TOOL_ERROR"
	}
	return name[len("ERROR_CODE_"):]
}

func resourceFromProto(r *toolboxv1.Resource) (*mcp.Resource, error) {
	if r.GetUri() == "" {
		return nil, fmt.Errorf("resource with an empty uri")
	}
	ann, err := annotationsFromProto(r.GetAnnotations())
	if err != nil {
		return nil, fmt.Errorf("resource %q: %v", r.GetUri(), err)
	}
	meta, err := metaFromJSON(r.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("resource %q: meta_json: %v", r.GetUri(), err)
	}
	name := r.GetName()
	if name == "" {
		name = r.GetUri()
	}
	return &mcp.Resource{URI: r.GetUri(), Name: name, Title: r.GetTitle(), Description: r.GetDescription(),
		MIMEType: r.GetMimeType(), Size: r.GetSize(), Annotations: ann, Icons: iconsFromProto(r.GetIcons()), Meta: meta}, nil
}

func templateFromProto(r *toolboxv1.ResourceTemplate) (*mcp.ResourceTemplate, error) {
	if r.GetUriTemplate() == "" {
		return nil, fmt.Errorf("resource template with an empty uri_template")
	}
	ann, err := annotationsFromProto(r.GetAnnotations())
	if err != nil {
		return nil, fmt.Errorf("resource template %q: %v", r.GetUriTemplate(), err)
	}
	meta, err := metaFromJSON(r.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("resource template %q: meta_json: %v", r.GetUriTemplate(), err)
	}
	name := r.GetName()
	if name == "" {
		name = r.GetUriTemplate()
	}
	return &mcp.ResourceTemplate{URITemplate: r.GetUriTemplate(), Name: name, Title: r.GetTitle(), Description: r.GetDescription(),
		MIMEType: r.GetMimeType(), Annotations: ann, Icons: iconsFromProto(r.GetIcons()), Meta: meta}, nil
}

func promptFromProto(p *toolboxv1.Prompt) (*mcp.Prompt, error) {
	if p.GetName() == "" {
		return nil, fmt.Errorf("prompt with an empty name")
	}
	meta, err := metaFromJSON(p.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("prompt %q: meta_json: %v", p.GetName(), err)
	}
	out := &mcp.Prompt{Name: p.GetName(), Title: p.GetTitle(), Description: p.GetDescription(), Icons: iconsFromProto(p.GetIcons()), Meta: meta}
	for _, a := range p.GetArguments() {
		if a.GetName() == "" {
			return nil, fmt.Errorf("prompt %q: argument with an empty name", p.GetName())
		}
		out.Arguments = append(out.Arguments, &mcp.PromptArgument{Name: a.GetName(), Title: a.GetTitle(), Description: a.GetDescription(), Required: a.GetRequired()})
	}
	return out, nil
}

func promptResultFromProto(r *toolboxv1.GetPromptResponse) (*mcp.GetPromptResult, error) {
	meta, err := metaFromJSON(r.GetMetaJson())
	if err != nil {
		return nil, fmt.Errorf("meta_json: %v", err)
	}
	out := &mcp.GetPromptResult{Description: r.GetDescription(), Messages: []*mcp.PromptMessage{}, Meta: meta}
	for i, m := range r.GetMessages() {
		role, err := roleFromProto(m.GetRole())
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %v", i, err)
		}
		c, err := contentFromProto(m.GetContent())
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		out.Messages = append(out.Messages, &mcp.PromptMessage{Role: role, Content: c})
	}
	return out, nil
}
